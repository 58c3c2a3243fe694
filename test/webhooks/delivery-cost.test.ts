import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pg, { type PoolClient } from 'pg'
import { createPool, type Pool } from '../../src/db/pool.ts'
import { queryRows } from '../../src/db/statement.ts'
import { AttemptRecorder } from '../../src/webhooks/attempt-recorder.ts'
import { dueDeliveriesClaim } from '../../src/webhooks/repository.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { decideOne, registerWebhook, sqlRows } from '../helpers/webhook-fixtures.ts'
import { WebhookReceiver } from '../helpers/webhook-receiver.ts'

const onPostgres = process.env.TEST_DATABASE_URL !== undefined

async function decideMany(t: TestApp, key: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) await decideOne(t, key)
}

async function eventually(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 25))
}

/** Every statement sent on `pool`'s connections from now on, as one line each. */
function statementsSentOn(pool: Pool): string[] {
  const sent: string[] = []
  const counted = new WeakSet<PoolClient>()
  pool.on('acquire', (client) => {
    if (counted.has(client)) return
    counted.add(client)
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    ;(client as unknown as { query: unknown }).query = (...args: unknown[]) => {
      const first = args[0] as string | { text: string }
      sent.push((typeof first === 'string' ? first : first.text).replace(/\s+/g, ' '))
      return query(...args)
    }
  })
  return sent
}

describe('what a delivery costs the database', () => {
  it('reads the bodies of a claimed page in one statement, records its answers in batches, and leaves a healthy webhook alone', async (t) => {
    const receivers = [
      await WebhookReceiver.start(),
      await WebhookReceiver.start(),
      await WebhookReceiver.start(),
    ]
    t.after(() => Promise.all(receivers.map((receiver) => receiver.close())))
    // The worker is started by hand below, once the deliveries are waiting, and counted from then on.
    const app = await buildTestApp(t, {
      config: { webhooks: { allowPrivate: true, deliver: false, pollMs: 1_000 } },
    })
    for (const receiver of receivers) await registerWebhook(app, { url: receiver.url })
    const a = await app.key('orchestrator', ['orch-a'])
    const events = 8
    await decideMany(app, a, events)
    const deliveries = events * receivers.length
    const sent = statementsSentOn(app.app.webhooks.workerDb)
    app.app.webhooks.worker.start()
    await eventually(async () => receivers.every((receiver) => receiver.requests.length >= events))
    await eventually(async () => {
      const [row] = await sqlRows<{ n: number }>(
        app.db.connectionString,
        `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'succeeded'`,
      )
      return row!.n === deliveries
    })
    await app.app.webhooks.worker.stop()

    const claims = sent.filter((text) => text.includes('WITH hooks AS')).length
    const bodyReads = sent.filter((text) => text.includes('FROM manifests')).length
    const records = sent.filter((text) => /^UPDATE webhook_deliveries (d )?SET attempts/.test(text)).length
    const streakClears = sent.filter((text) => text.includes('SET failing_since = NULL')).length
    // One read of the page's manifests per claim that took deliveries, never one per delivery.
    assert.ok(bodyReads <= claims, `${bodyReads} body reads for ${claims} claims`)
    // Quick answers to a page's attempts are recorded together.
    assert.ok(records <= deliveries / 2, `${records} statements recorded ${deliveries} attempts`)
    assert.equal(streakClears, 0, 'a webhook that never failed has no streak to clear')
    for (const receiver of receivers) {
      assert.deepEqual(
        receivers[0]!.requests.map((request) => request.body).sort(),
        receiver.requests.map((request) => request.body).sort(),
        'every webhook gets the same bodies',
      )
    }
  })

  it('records a batch under each attempt’s own lease: an answer whose lease was taken over is dropped', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, deliver: false } } })
    await registerWebhook(app, { url: receiver.url })
    const a = await app.key('orchestrator', ['orch-a'])
    await decideMany(app, a, 3)
    const pool = createPool({ connectionString: app.db.connectionString, max: 1 })
    t.after(() => pool.end())
    const claimed = await queryRows(pool, dueDeliveriesClaim(3, 60_000))
    assert.equal(claimed.length, 3)
    const [kept, takenOver, failed] = claimed as [
      (typeof claimed)[0],
      (typeof claimed)[0],
      (typeof claimed)[0],
    ]
    // Its lease passed and another replica's attempt holds the delivery now.
    await sqlRows(
      app.db.connectionString,
      'UPDATE webhook_deliveries SET lease_token = gen_random_uuid() WHERE id = $1',
      [takenOver.id],
    )
    const sent = statementsSentOn(pool)
    const recorder = new AttemptRecorder(pool)
    const [keptRecorded, takenOverRecorded, failedRecorded] = await Promise.all([
      recorder.record({
        claimed: kept,
        result: { statusCode: 204, error: null, next: { status: 'succeeded' } },
      }),
      recorder.record({
        claimed: takenOver,
        result: { statusCode: 204, error: null, next: { status: 'succeeded' } },
      }),
      recorder.record({
        claimed: failed,
        result: { statusCode: 500, error: 'HTTP 500', next: { status: 'pending', delayMs: 60_000 } },
      }),
    ])
    assert.equal(sent.length, 1, 'one statement for the three')
    assert.deepEqual(keptRecorded, { webhookFailing: false })
    assert.equal(takenOverRecorded, undefined)
    assert.deepEqual(failedRecorded, { webhookFailing: false })
    const rows = await sqlRows<{ id: string; status: string; attempts: number; lease_token: string | null }>(
      app.db.connectionString,
      'SELECT id, status, attempts, lease_token FROM webhook_deliveries',
    )
    const byId = new Map(rows.map((row) => [row.id, row]))
    const state = (id: string) => {
      const { status, attempts, lease_token } = byId.get(id)!
      return { status, attempts, leased: lease_token !== null }
    }
    assert.deepEqual(state(kept.id), { status: 'succeeded', attempts: 1, leased: false })
    // The other attempt's lease is left as it is.
    assert.deepEqual(state(takenOver.id), { status: 'pending', attempts: 0, leased: true })
    assert.deepEqual(state(failed.id), { status: 'pending', attempts: 1, leased: false })
  })

  it('keeps its connections to a receiver open across attempts', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, deliver: false } } })
    await registerWebhook(app, { url: receiver.url })
    const a = await app.key('orchestrator', ['orch-a'])
    const events = 12
    await decideMany(app, a, events)
    app.app.webhooks.worker.start()
    await eventually(async () => receiver.requests.length >= events)
    // At most one connection per attempt in flight (a webhook has 4 at once), not one per attempt.
    assert.ok(receiver.connections <= 4, `${receiver.connections} connections for ${events} attempts`)
  })
})

/**
 * Holds, on a connection of its own, the lock a decision sending the NOTIFY holds: a decision committing meanwhile
 * skips its NOTIFY. COMMIT on the client returned lets it go.
 */
async function holdNotifyLock(t: { after: (fn: () => unknown) => void }, connectionString: string) {
  const other = new pg.Client({ connectionString })
  await other.connect()
  // The database is dropped when the test ends, maybe before this connection is closed.
  other.on('error', () => {})
  t.after(() => other.end().catch(() => {}))
  await other.query('BEGIN')
  await other.query('SELECT pg_advisory_xact_lock(7246153003)')
  return other
}

describe('a decision’s NOTIFY', {
  skip: onPostgres ? false : 'LISTEN needs a real PostgreSQL server',
}, () => {
  it('is left to the decision sending one at that moment: one that commits meanwhile skips it', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, deliver: false } } })
    await registerWebhook(app, { url: receiver.url })
    const a = await app.key('orchestrator', ['orch-a'])
    const listener = new pg.Client({ connectionString: app.db.connectionString })
    await listener.connect()
    // The database is dropped when the test ends, maybe before these connections are closed.
    listener.on('error', () => {})
    t.after(() => listener.end().catch(() => {}))
    let notified = 0
    listener.on('notification', () => {
      notified += 1
    })
    await listener.query('LISTEN arbiter_webhooks')
    await decideMany(app, a, 1)
    await eventually(async () => notified === 1)
    // Another decision holds the lock that names the one notifying.
    const other = await holdNotifyLock(t, app.db.connectionString)
    await decideMany(app, a, 1)
    await other.query('COMMIT')
    await decideMany(app, a, 1)
    await eventually(async () => notified === 2)
    const [row] = await sqlRows<{ n: number }>(
      app.db.connectionString,
      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'`,
    )
    assert.equal(row!.n, 3, 'the deliveries are stored all the same')
    assert.equal(notified, 2)
  })

  it('is not needed by a listening worker: a decision that skipped it is delivered by the next poll', {
    timeout: 15_000,
  }, async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const pollMs = 400
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, listen: true, pollMs } } })
    await registerWebhook(app, { url: receiver.url })
    const a = await app.key('orchestrator', ['orch-a'])
    await decideMany(app, a, 1)
    await eventually(async () => receiver.requests.length === 1)
    const other = await holdNotifyLock(t, app.db.connectionString)
    await decideMany(app, a, 1)
    const decided = performance.now()
    await eventually(async () => receiver.requests.length === 2)
    const waited = performance.now() - decided
    await other.query('COMMIT')
    assert.ok(waited < pollMs * 3, `delivered ${Math.round(waited)} ms after the decision`)
  })
})
