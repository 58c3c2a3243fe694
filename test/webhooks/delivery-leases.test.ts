import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pg from 'pg'
import { createPool } from '../../src/db/pool.ts'
import { queryFirst } from '../../src/db/statement.ts'
import { WebhookDeliveryWorker } from '../../src/webhooks/delivery-worker.ts'
import { deliveryRedeliver, LEASES_PER_WEBHOOK } from '../../src/webhooks/repository.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createTestDatabase } from '../helpers/database.ts'
import {
  decideOne,
  interpretedOutcome,
  registerWebhook,
  setWebhookDisabled,
  sqlRows as sql,
} from '../helpers/webhook-fixtures.ts'
import { WebhookReceiver } from '../helpers/webhook-receiver.ts'

// Holding a lock from a second connection while the app waits on it needs the real PostgreSQL server.
const onPostgres = process.env.TEST_DATABASE_URL !== undefined
const skip = onPostgres ? false : 'needs TEST_DATABASE_URL (a real PostgreSQL server)'

const register = (t: TestApp, url: string) => registerWebhook(t, { url })

/** Polls until `check` holds (the tests wait for the worker, never for a fixed time). */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read()
    if (check(value)) return value
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

describe('a receiver that hangs', () => {
  it('holds only its own leases: with every slot free to it, another webhook is still delivered before any of its attempts times out', async (t) => {
    const hanging = await WebhookReceiver.start()
    const healthy = await WebhookReceiver.start()
    t.after(() => Promise.all([hanging.close(), healthy.close()]))
    hanging.behave = () => ({ kind: 'hang' })
    const registering = await buildTestApp(t, {
      config: { webhooks: { allowPrivate: true, deliver: false } },
    })
    const slow = await register(registering, hanging.url)
    const a = await registering.key('orchestrator', ['orch-a'])
    // More of the hanging webhook's deliveries are due than the worker has slots: without a cap, they would take
    // them all before the healthy webhook's delivery is stored.
    const concurrency = LEASES_PER_WEBHOOK * 2
    for (let i = 0; i < concurrency + 1; i++) await decideOne(registering, a)
    await buildTestApp(t, {
      database: registering.db,
      config: {
        webhooks: { allowPrivate: true, pollMs: 20, attemptTimeoutMs: 10_000, leaseMs: 12_000, concurrency },
      },
    })
    await hanging.until((requests) => requests.length >= LEASES_PER_WEBHOOK)
    const fine = await register(registering, healthy.url)
    await decideOne(registering, a)
    await eventually(
      () =>
        sql<{ status: string }>(
          registering.db.connectionString,
          'SELECT status FROM webhook_deliveries WHERE webhook_id = $1',
          [fine.webhook_id],
        ),
      (rows) => rows[0]?.status === 'succeeded',
    )
    const slowRows = await sql<{ attempts: number; leased: boolean }>(
      registering.db.connectionString,
      `SELECT attempts, lease_token IS NOT NULL AND next_attempt_at > now() AS leased
       FROM webhook_deliveries WHERE webhook_id = $1`,
      [slow.webhook_id],
    )
    assert.deepEqual(
      slowRows.map((row) => row.attempts),
      slowRows.map(() => 0),
      'no attempt of the hanging receiver had ended yet',
    )
    assert.ok(slowRows.filter((row) => row.leased).length <= LEASES_PER_WEBHOOK)
  })

  it(`never has more than ${LEASES_PER_WEBHOOK} deliveries of one webhook leased, whatever the free slots`, async (t) => {
    const hanging = await WebhookReceiver.start()
    t.after(() => hanging.close())
    hanging.behave = () => ({ kind: 'hang' })
    const registering = await buildTestApp(t, {
      config: { webhooks: { allowPrivate: true, deliver: false } },
    })
    const slow = await register(registering, hanging.url)
    const a = await registering.key('orchestrator', ['orch-a'])
    for (let i = 0; i < LEASES_PER_WEBHOOK + 3; i++) await decideOne(registering, a)
    await buildTestApp(t, {
      database: registering.db,
      config: {
        webhooks: {
          allowPrivate: true,
          pollMs: 20,
          attemptTimeoutMs: 10_000,
          leaseMs: 12_000,
          concurrency: 16,
        },
      },
    })
    await hanging.until((requests) => requests.length >= LEASES_PER_WEBHOOK)
    const [leased] = await sql<{ n: number }>(
      registering.db.connectionString,
      `SELECT count(*)::int AS n FROM webhook_deliveries
       WHERE webhook_id = $1 AND lease_token IS NOT NULL AND next_attempt_at > now() AND attempts = 0`,
      [slow.webhook_id],
    )
    assert.equal(leased!.n, LEASES_PER_WEBHOOK)
  })
})

describe('an attempt stays within its lease', { skip }, () => {
  it('is not sent when building its body took the lease: never two attempts of one delivery at once', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    receiver.behave = () => ({ kind: 'status', status: 204, delayMs: 300 })
    const registering = await buildTestApp(t, {
      config: { webhooks: { allowPrivate: true, deliver: false } },
    })
    await register(registering, receiver.url)
    const a = await registering.key('orchestrator', ['orch-a'])
    await decideOne(registering, a)
    // Building the body reads the manifest: held here, both replicas claim the delivery in turn and wait.
    const locker = new pg.Client({ connectionString: registering.db.connectionString })
    await locker.connect()
    // The database is dropped when the test ends, maybe before this connection is closed.
    locker.on('error', () => {})
    t.after(() => locker.end().catch(() => {}))
    await locker.query('BEGIN')
    await locker.query('LOCK TABLE manifests IN ACCESS EXCLUSIVE MODE')
    const webhooks = { allowPrivate: true, pollMs: 20, attemptTimeoutMs: 500, leaseMs: 1500 }
    await buildTestApp(t, { database: registering.db, config: { webhooks } })
    await buildTestApp(t, { database: registering.db, config: { webhooks } })
    await eventually(
      () =>
        sql<{ n: number }>(
          registering.db.connectionString,
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM manifests WHERE id%'`,
        ),
      (rows) => rows[0]!.n >= 2,
    )
    await locker.query('COMMIT')
    await eventually(
      () => sql<{ status: string }>(registering.db.connectionString, 'SELECT status FROM webhook_deliveries'),
      (rows) => rows[0]?.status === 'succeeded',
    )
    assert.ok(receiver.requests.length >= 1)
    for (const request of receiver.requests) assert.equal(request.concurrentSameId, 0, 'a concurrent attempt')
  })
})

describe('deleting a webhook while decisions commit', { skip }, () => {
  it('answers the decision 2xx: the deleted webhook is left out once its deletion commits', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, deliver: false } } })
    const kept = await register(app, 'http://127.0.0.1:9/kept')
    const gone = await register(app, 'http://127.0.0.1:9/gone')
    const a = await app.key('orchestrator', ['orch-a'])
    const outcomeId = await interpretedOutcome(app, a)
    const deleter = new pg.Client({ connectionString: app.db.connectionString })
    await deleter.connect()
    // The database is dropped when the test ends, maybe before this connection is closed.
    deleter.on('error', () => {})
    t.after(() => deleter.end().catch(() => {}))
    // What removeWebhook does, held open until the decision waits on it.
    await deleter.query('BEGIN')
    await deleter.query('SELECT id FROM webhooks WHERE id = $1 FOR UPDATE', [gone.webhook_id])
    await deleter.query('DELETE FROM webhooks WHERE id = $1', [gone.webhook_id])
    const deciding = app.request(a, { method: 'POST', url: `/v1/outcomes/${outcomeId}/evaluate` })
    await eventually(
      () =>
        sql<{ n: number }>(
          app.db.connectionString,
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        ),
      (rows) => rows[0]!.n >= 1,
    )
    await deleter.query('COMMIT')
    const decided = await deciding
    assert.equal(decided.statusCode, 200, decided.body)
    const rows = await sql<{ webhook_id: string }>(
      app.db.connectionString,
      'SELECT webhook_id FROM webhook_deliveries',
    )
    assert.deepEqual(
      rows.map((row) => row.webhook_id),
      [kept.webhook_id],
    )
  })

  it('answers every decision 2xx while webhooks are deleted and patched through the API', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, deliver: false } } })
    const a = await app.key('orchestrator', ['orch-a'])
    for (let round = 0; round < 5; round++) {
      const hooks = await Promise.all(
        [1, 2, 3, 4].map((n) => register(app, `http://127.0.0.1:9/${round}/${n}`)),
      )
      const outcomes = await Promise.all([1, 2, 3].map(() => interpretedOutcome(app, a)))
      const [decisions] = await Promise.all([
        Promise.all(
          outcomes.map((id) => app.request(a, { method: 'POST', url: `/v1/outcomes/${id}/evaluate` })),
        ),
        Promise.all(
          hooks.map((hook, n) =>
            n % 2 === 0
              ? app.request(app.adminKey, { method: 'DELETE', url: `/v1/webhooks/${hook.webhook_id}` })
              : app.request(app.adminKey, {
                  method: 'PATCH',
                  url: `/v1/webhooks/${hook.webhook_id}`,
                  payload: { description: 'changed' },
                }),
          ),
        ),
      ])
      for (const decided of decisions) assert.equal(decided.statusCode, 200, decided.body)
    }
  })
})

describe('redeliver', () => {
  it('answers 409 on a disabled webhook, which would never send it', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, deliver: false } } })
    const hook = await register(app, 'http://127.0.0.1:9/hook')
    const a = await app.key('orchestrator', ['orch-a'])
    await decideOne(app, a)
    const listed = await app.request(app.adminKey, {
      method: 'GET',
      url: `/v1/webhooks/${hook.webhook_id}/deliveries`,
    })
    const [delivery] = listed.json().items as { delivery_id: string }[]
    const disabled = await app.request(app.adminKey, {
      method: 'PATCH',
      url: `/v1/webhooks/${hook.webhook_id}`,
      payload: { disabled: true },
    })
    assert.equal(disabled.statusCode, 200, disabled.body)
    const redelivered = await app.request(app.adminKey, {
      method: 'POST',
      url: `/v1/webhooks/${hook.webhook_id}/deliveries/${delivery!.delivery_id}/redeliver`,
    })
    assert.equal(redelivered.statusCode, 409, redelivered.body)
    assert.match(String(redelivered.headers['content-type']), /problem\+json/)
    const [row] = await sql<{ status: string }>(
      app.db.connectionString,
      'SELECT status FROM webhook_deliveries',
    )
    assert.equal(row!.status, 'failed', 'left as the disabling settled it')
  })
})

describe('a webhook disabled while a decision commits', () => {
  it('has the delivery the disabling did not see failed by the worker, never pending for ever', {
    timeout: 15_000,
  }, async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, deliver: false } } })
    const hook = await register(app, 'http://127.0.0.1:9/hook')
    const a = await app.key('orchestrator', ['orch-a'])
    await decideOne(app, a)
    // What the race leaves: the webhook disabled, its delivery (stored by a decision committing meanwhile) pending.
    await sql(
      app.db.connectionString,
      'UPDATE webhooks SET disabled_at = now(), disabled_reason = $2 WHERE id = $1',
      [hook.webhook_id, 'disabled_by_admin'],
    )
    await buildTestApp(t, {
      database: app.db,
      config: { webhooks: { allowPrivate: true, pollMs: 20, pruneIntervalMs: 50 } },
    })
    const [row] = await eventually(
      () =>
        sql<{ status: string; last_error: string | null }>(
          app.db.connectionString,
          'SELECT status, last_error FROM webhook_deliveries',
        ),
      (rows) => rows[0]?.status !== 'pending',
    )
    assert.deepEqual(row, { status: 'failed', last_error: 'webhook disabled' })
  })

  it('keeps the lease of an attempt in flight: redelivered after enabling, it waits for that attempt', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, deliver: false } } })
    const hook = await register(app, 'http://127.0.0.1:9/hook')
    const a = await app.key('orchestrator', ['orch-a'])
    await decideOne(app, a)
    // An attempt in flight, as a worker's claim leaves it.
    const [leased] = await sql<{ id: string }>(
      app.db.connectionString,
      `UPDATE webhook_deliveries SET lease_token = gen_random_uuid(), next_attempt_at = now() + interval '1 hour'
       RETURNING id`,
    )
    await setWebhookDisabled(app, hook.webhook_id, true)
    await setWebhookDisabled(app, hook.webhook_id, false)
    const redelivered = await app.request(app.adminKey, {
      method: 'POST',
      url: `/v1/webhooks/${hook.webhook_id}/deliveries/${leased!.id}/redeliver`,
    })
    assert.equal(redelivered.statusCode, 202, redelivered.body)
    const [row] = await sql<{ status: string; due_later: boolean }>(
      app.db.connectionString,
      `SELECT status, next_attempt_at > now() + interval '50 minutes' AS due_later FROM webhook_deliveries`,
    )
    assert.deepEqual(row, { status: 'pending', due_later: true }, 'due once the attempt in flight has ended')
  })

  it('redelivers nothing of a webhook disabled after it was read', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, deliver: false } } })
    const hook = await register(app, 'http://127.0.0.1:9/hook')
    const a = await app.key('orchestrator', ['orch-a'])
    await decideOne(app, a)
    await setWebhookDisabled(app, hook.webhook_id, true)
    const [delivery] = await sql<{ id: string }>(app.db.connectionString, 'SELECT id FROM webhook_deliveries')
    const pool = createPool({ connectionString: app.db.connectionString, max: 1 })
    t.after(() => pool.end())
    assert.equal(await queryFirst(pool, deliveryRedeliver(hook.webhook_id, delivery!.id)), undefined)
    const [row] = await sql<{ status: string }>(
      app.db.connectionString,
      'SELECT status FROM webhook_deliveries',
    )
    assert.equal(row!.status, 'failed')
  })
})

describe('the failing streak', () => {
  it('ends once none of the webhook deliveries is pending, so an old failure cannot disable it later', {
    timeout: 20_000,
  }, async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    receiver.behave = () => ({ kind: 'status', status: 500 })
    const app = await buildTestApp(t, {
      config: {
        webhooks: {
          allowPrivate: true,
          pollMs: 20,
          retryScheduleMs: [50],
          maxAgeMs: 200,
          disableAfterMs: 1_000,
        },
      },
    })
    const hook = await register(app, receiver.url)
    const a = await app.key('orchestrator', ['orch-a'])
    await decideOne(app, a)
    await eventually(
      () => sql<{ status: string }>(app.db.connectionString, 'SELECT status FROM webhook_deliveries'),
      (rows) => rows[0]?.status === 'failed',
    )
    // The worker ends the streak right after recording the last attempt; without that, this never holds.
    await eventually(
      () =>
        sql<{ failing_since: Date | null }>(
          app.db.connectionString,
          'SELECT failing_since FROM webhooks WHERE id = $1',
          [hook.webhook_id],
        ),
      (rows) => rows[0]!.failing_since === null,
    )
    // Longer than disableAfterMs since the first failure: counted from there, the next failure would disable it.
    await new Promise((resolve) => setTimeout(resolve, 1_200))
    await decideOne(app, a)
    await eventually(
      () =>
        sql<{ status: string }>(
          app.db.connectionString,
          'SELECT status FROM webhook_deliveries ORDER BY list_seq DESC LIMIT 1',
        ),
      (rows) => rows[0]?.status === 'failed',
    )
    const view = await app.request(app.adminKey, { method: 'GET', url: `/v1/webhooks/${hook.webhook_id}` })
    assert.equal(view.json().disabled_at, null)
  })
})

describe('stopping the delivery worker', { skip }, () => {
  it('leaves no LISTEN connection behind when it stops while that connection is being made', async () => {
    const db = await createTestDatabase()
    const pool = createPool({ connectionString: db.connectionString, max: 2 })
    try {
      for (let i = 0; i < 5; i++) {
        const worker = new WebhookDeliveryWorker(
          pool,
          {
            policy: { allowedHosts: [], allowPrivate: true },
            maxAgeMs: 60_000,
            disableAfterMs: 60_000,
            retryScheduleMs: [1000],
            attemptTimeoutMs: 1000,
            leaseMs: 2000,
            pollMs: 50,
            idleCheckMs: 30_000,
            concurrency: 1,
            listenConnectionString: db.connectionString,
            retentionMs: 3_600_000,
            pruneIntervalMs: 60_000,
            pruneBatch: 100,
            showEscalation: (escalation) => ({ ...escalation }),
          },
          { attempt: () => {}, settled: () => {} },
          () => {},
        )
        worker.start()
        await worker.stop()
      }
      // A connection left behind would have finished connecting by now.
      await new Promise((resolve) => setTimeout(resolve, 300))
      const [listening] = await sql<{ n: number }>(
        db.connectionString,
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND query = 'LISTEN arbiter_webhooks'`,
      )
      assert.equal(listening!.n, 0)
    } finally {
      await pool.end()
      await db.stop()
    }
  })
})
