import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import pg from 'pg'
import { typeParsers } from '../../src/db/pool.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { decideOne, registerWebhook } from '../helpers/webhook-fixtures.ts'
import { WebhookReceiver } from '../helpers/webhook-receiver.ts'

/** Increasing delays, so that the k-th request a receiver gets follows a failure numbered k or more. */
const SCHEDULE = [100, 200, 400, 800, 1600]
const JITTER = 0.2

const register = (t: TestApp, body: { url: string; events: string[] }) => registerWebhook(t, body)

interface Delivery {
  delivery_id: string
  event_id: string
  status: string
  attempts: number
  last_status_code: number | null
  last_error: string | null
  next_attempt_at: string | null
}

async function deliveries(t: TestApp, webhookId: string): Promise<Delivery[]> {
  const response = await t.request(t.adminKey, { method: 'GET', url: `/v1/webhooks/${webhookId}/deliveries` })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().items
}

async function webhook(t: TestApp, webhookId: string) {
  return (await t.request(t.adminKey, { method: 'GET', url: `/v1/webhooks/${webhookId}` })).json()
}

/** Polls the API until `check` holds (the tests wait for the worker, never for a fixed time). */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read()
    if (check(value)) return value
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

async function auditRecords(t: TestApp, kind: string) {
  const response = await t.request(t.adminKey, { method: 'GET', url: `/v1/audit/records?kind=${kind}` })
  return response.json().items as { kind: string; actor: string; data: Record<string, unknown> }[]
}

describe('a receiver that is down, then back', () => {
  it('gets the event with the same webhook-id after refusals, 500s, a timeout and a slow body, on the schedule', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const app = await buildTestApp(t, {
      config: {
        webhooks: { allowPrivate: true, pollMs: 20, retryScheduleMs: SCHEDULE, attemptTimeoutMs: 2000 },
      },
    })
    const hook = await register(app, { url: receiver.url, events: ['manifest.issued'] })
    await receiver.refuse()
    const a = await app.key('orchestrator', ['orch-a'])
    await decideOne(app, a)
    const refused = await eventually(
      () => deliveries(app, hook.webhook_id),
      (items) => items[0] !== undefined && items[0].attempts >= 1,
    )
    assert.equal(refused[0]!.status, 'pending')
    assert.match(refused[0]!.last_error ?? '', /ECONNREFUSED/)
    assert.notEqual(refused[0]!.next_attempt_at, null)
    const answers = ['500', 'hang', 'slow', '204']
    receiver.behave = () => {
      const answer = answers[Math.min(receiver.requests.length - 1, answers.length - 1)]
      if (answer === 'hang') return { kind: 'hang' }
      if (answer === 'slow') return { kind: 'slow_body', status: 200, chunkEveryMs: 100 }
      return { kind: 'status', status: Number(answer) }
    }
    await receiver.accept()
    await receiver.until((requests) => requests.length >= 4)
    const settled = await eventually(
      () => deliveries(app, hook.webhook_id),
      (items) => items[0]?.status === 'succeeded',
    )
    assert.equal(settled.length, 1)
    assert.equal(new Set(receiver.requests.map((request) => request.id)).size, 1)
    assert.equal(receiver.requests[0]!.id, settled[0]!.event_id)
    assert.ok(settled[0]!.attempts >= 5, `attempts ${settled[0]!.attempts}`)
    assert.equal(settled[0]!.last_status_code, 204)
    // The k-th request followed a failure numbered k or more, so it waited at least that failure's delay.
    for (let k = 1; k < receiver.requests.length; k++) {
      const gap = receiver.requests[k]!.receivedAt - receiver.requests[k - 1]!.receivedAt
      assert.ok(gap >= SCHEDULE[k - 1]! * (1 - JITTER), `gap ${k}: ${gap} ms`)
    }
    assert.equal(receiver.requests.length, 4, 'no attempt after the success')
  })

  it('fails a delivery that is still failing at the maximum age, and redeliver sends it again with its id', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    receiver.behave = () => ({ kind: 'status', status: 503 })
    const app = await buildTestApp(t, {
      config: { webhooks: { allowPrivate: true, pollMs: 20, retryScheduleMs: [50], maxAgeMs: 400 } },
    })
    const hook = await register(app, { url: receiver.url, events: ['manifest.issued'] })
    const a = await app.key('orchestrator', ['orch-a'])
    await decideOne(app, a)
    const failed = await eventually(
      () => deliveries(app, hook.webhook_id),
      (items) => items[0]?.status === 'failed',
    )
    assert.ok(failed[0]!.attempts >= 2)
    assert.equal(failed[0]!.last_status_code, 503)
    assert.equal(failed[0]!.next_attempt_at, null)
    const before = receiver.requests.length
    receiver.behave = () => ({ kind: 'status', status: 200 })
    const redelivered = await app.request(app.adminKey, {
      method: 'POST',
      url: `/v1/webhooks/${hook.webhook_id}/deliveries/${failed[0]!.delivery_id}/redeliver`,
    })
    assert.equal(redelivered.statusCode, 202, redelivered.body)
    assert.equal(redelivered.json().status, 'pending')
    await eventually(
      () => deliveries(app, hook.webhook_id),
      (items) => items[0]?.status === 'succeeded',
    )
    assert.equal(receiver.requests.length, before + 1)
    assert.equal(receiver.requests.at(-1)!.id, failed[0]!.event_id)
    const pending = await app.request(app.adminKey, {
      method: 'GET',
      url: `/v1/webhooks/${hook.webhook_id}/deliveries?status=pending`,
    })
    assert.deepEqual(pending.json().items, [])
  })
})

describe('disabling', () => {
  it('disables a webhook at once on 410 Gone, audited, and sends it nothing more', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    receiver.behave = () => ({ kind: 'status', status: 410 })
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, pollMs: 20 } } })
    const hook = await register(app, { url: receiver.url, events: ['manifest.issued'] })
    const a = await app.key('orchestrator', ['orch-a'])
    await decideOne(app, a)
    const disabled = await eventually(
      () => webhook(app, hook.webhook_id),
      (view) => view.disabled_at !== null,
    )
    assert.equal(disabled.disabled_reason, 'gone')
    const [record] = await eventually(
      () => auditRecords(app, 'webhook.disabled'),
      (records) => records.length > 0,
    )
    assert.equal(record!.actor, 'system')
    assert.equal(record!.data.reason, 'gone')
    const items = await deliveries(app, hook.webhook_id)
    assert.equal(items[0]!.status, 'failed')
    assert.equal(items[0]!.attempts, 1)
    await decideOne(app, a)
    assert.equal(
      (await deliveries(app, hook.webhook_id)).length,
      1,
      'a disabled webhook gets no new deliveries',
    )
    assert.equal(receiver.requests.length, 1)
  })

  it('disables a webhook whose every attempt failed for the configured time, audited; enabling clears it', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    receiver.behave = () => ({ kind: 'status', status: 500 })
    const app = await buildTestApp(t, {
      config: { webhooks: { allowPrivate: true, pollMs: 20, retryScheduleMs: [50], disableAfterMs: 300 } },
    })
    const hook = await register(app, { url: receiver.url, events: ['manifest.issued'] })
    const a = await app.key('orchestrator', ['orch-a'])
    await decideOne(app, a)
    const disabled = await eventually(
      () => webhook(app, hook.webhook_id),
      (view) => view.disabled_at !== null,
    )
    assert.equal(disabled.disabled_reason, 'failing')
    assert.ok(receiver.requests.length >= 2)
    const records = await eventually(
      () => auditRecords(app, 'webhook.disabled'),
      (found) => found.length > 0,
    )
    assert.equal(records[0]!.data.reason, 'failing')
    const enabled = await app.request(app.adminKey, {
      method: 'PATCH',
      url: `/v1/webhooks/${hook.webhook_id}`,
      payload: { disabled: false },
    })
    assert.equal(enabled.json().disabled_at, null)
    assert.equal(enabled.json().disabled_reason, null)
  })
})

describe('the SSRF guard at every attempt', () => {
  it('refuses an attempt the policy no longer allows, naming the webhook variables', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const registering = await buildTestApp(t, {
      config: { webhooks: { allowPrivate: true, deliver: false } },
    })
    await buildTestApp(t, {
      database: registering.db,
      config: { webhooks: { allowPrivate: false, pollMs: 20, retryScheduleMs: [60_000] } },
    })
    const hook = await register(registering, { url: receiver.url, events: ['manifest.issued'] })
    const a = await registering.key('orchestrator', ['orch-a'])
    await decideOne(registering, a)
    const [blocked] = await eventually(
      () => deliveries(registering, hook.webhook_id),
      (items) => items[0] !== undefined && items[0].attempts >= 1,
    )
    assert.match(blocked!.last_error ?? '', /ARBITER_WEBHOOK_ALLOW_PRIVATE/)
    assert.equal(receiver.requests.length, 0)
  })
})

describe('events are written with the decision', () => {
  it('stores no event for a manifest whose transaction rolled back, and one for a committed one', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, deliver: false } } })
    const hook = await register(app, { url: 'http://127.0.0.1:9/hook', events: ['manifest.issued'] })
    const client = new pg.Client({ connectionString: app.db.connectionString, types: typeParsers })
    await client.connect()
    try {
      const insert = async () => {
        const id = randomUUID()
        await client.query(
          `INSERT INTO manifests (id, kind, case_kind, case_id, case_round, subagent_id, verdict, directive, final,
           inputs_digest, issued_at, audit_seq, manifest_jcs, manifest_digest, jws)
         VALUES ($1, 'outcome', 'outcome', $2, 0, 'agent', 'AGREED', 'PROCEED', true, 'sha256:0', now(), NULL,
           '{}', 'sha256:0', 'x.y.z')`,
          [id, randomUUID()],
        )
        return id
      }
      await client.query('BEGIN')
      await insert()
      await client.query('ROLLBACK')
      assert.deepEqual(await deliveries(app, hook.webhook_id), [])
      await client.query('BEGIN')
      const committed = await insert()
      await client.query('COMMIT')
      const items = await deliveries(app, hook.webhook_id)
      assert.equal(items.length, 1)
      const { rows } = await client.query('SELECT manifest_id FROM webhook_events WHERE id = $1', [
        items[0]!.event_id,
      ])
      assert.equal(rows[0].manifest_id, committed)
    } finally {
      await client.end()
    }
  })
})
