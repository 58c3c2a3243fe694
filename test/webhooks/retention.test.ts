import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { decideOne, registerWebhook, setWebhookDisabled } from '../helpers/webhook-fixtures.ts'
import { WebhookReceiver } from '../helpers/webhook-receiver.ts'

/*
 * Retention: the worker deletes settled deliveries whose last activity is older than the retention (7 days by
 * default), a bounded batch at a time, then the events left without deliveries; pending deliveries stay, however
 * old. Rows are aged in the database rather than waited for.
 */

const register = async (t: TestApp, url: string) => (await registerWebhook(t, { url })).webhook_id

async function rows<R>(t: TestApp, text: string, values: unknown[] = []): Promise<R[]> {
  return (await t.app.db.query(text, values)).rows as R[]
}

/** Reads until `check` holds; fails after `withinMs`. */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, withinMs = 10_000) {
  const deadline = Date.now() + withinMs
  for (;;) {
    const value = await read()
    if (check(value)) return value
    assert.ok(Date.now() < deadline, `still ${JSON.stringify(value)}`)
    await sleep(25)
  }
}

const statusesOf = (t: TestApp, webhookId: string) =>
  rows<{ status: string; attempts: number }>(
    t,
    'SELECT status, attempts FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY list_seq',
    [webhookId],
  )

describe('webhook retention', () => {
  it('deletes settled deliveries past the retention in batches, and the events left without one; never a pending one', async (t) => {
    const up = await WebhookReceiver.start()
    const down = await WebhookReceiver.start()
    t.after(() => Promise.all([up.close(), down.close()]))
    down.behave = () => ({ kind: 'status', status: 503 })
    const app = await buildTestApp(t, {
      config: {
        webhooks: {
          allowPrivate: true,
          pollMs: 20,
          retryScheduleMs: [600_000],
          pruneIntervalMs: 50,
          pruneBatch: 2,
        },
      },
    })
    const ok = await register(app, up.url)
    const failing = await register(app, down.url)
    const off = await register(app, down.url.replace('/hook', '/off'))
    const deleted = await register(app, up.url.replace('/hook', '/deleted'))
    const a = await app.key('orchestrator', ['orch-a'])
    // Three decisions for the first three webhooks, and a test event for the fourth alone, which is deleted.
    await app.request(app.adminKey, {
      method: 'PATCH',
      url: `/v1/webhooks/${deleted}`,
      payload: { events: ['escalation.opened'] },
    })
    for (let i = 0; i < 3; i++) await decideOne(app, a)
    const test = await app.request(app.adminKey, { method: 'POST', url: `/v1/webhooks/${deleted}/test` })
    assert.equal(test.statusCode, 202, test.body)
    await eventually(
      () => statusesOf(app, ok),
      (items) => items.length === 3 && items.every((item) => item.status === 'succeeded'),
    )
    await eventually(
      () => statusesOf(app, deleted),
      (items) => items.length === 1 && items[0]!.status === 'succeeded',
    )
    await eventually(
      () => Promise.all([statusesOf(app, failing), statusesOf(app, off)]),
      (lists) => lists.every((items) => items.length === 3 && items.every((item) => item.attempts >= 1)),
    )
    await setWebhookDisabled(app, off, true)
    const removed = await app.request(app.adminKey, { method: 'DELETE', url: `/v1/webhooks/${deleted}` })
    assert.equal(removed.statusCode, 204, removed.body)
    const [orphan] = await rows<{ id: string }>(
      app,
      "SELECT id FROM webhook_events WHERE type = 'webhook.test'",
    )
    assert.ok(orphan)

    // Everything 8 days old, but the latest success only 6 and a failure whose last attempt was yesterday.
    await app.app.db.query(
      `WITH aged AS (
         UPDATE webhook_deliveries SET created_at = created_at - interval '8 days',
           retry_from = retry_from - interval '8 days', last_attempt_at = last_attempt_at - interval '8 days'
         RETURNING 1)
       UPDATE webhook_events SET created_at = created_at - interval '8 days'`,
    )
    await app.app.db.query(
      `UPDATE webhook_deliveries SET last_attempt_at = now() - interval '6 days'
       WHERE id = (SELECT id FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY list_seq DESC LIMIT 1)`,
      [ok],
    )
    await app.app.db.query(
      `UPDATE webhook_deliveries SET last_attempt_at = now() - interval '1 day'
       WHERE id = (SELECT id FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY list_seq LIMIT 1)`,
      [off],
    )

    await eventually(
      () => Promise.all([statusesOf(app, ok), statusesOf(app, off)]),
      ([kept, failed]) => kept.length === 1 && failed.length === 1,
    )
    assert.deepEqual(
      (await statusesOf(app, failing)).map((item) => item.status),
      ['pending', 'pending', 'pending'],
      'pending deliveries are never pruned, however old',
    )
    await eventually(
      () => rows<{ id: string }>(app, 'SELECT id FROM webhook_events WHERE id = $1', [orphan!.id]),
      (found) => found.length === 0,
    )
    // The three decisions' events are still delivered (pending, or kept) to someone: they stay.
    const [events] = await rows<{ n: number }>(app, 'SELECT count(*)::int AS n FROM webhook_events')
    assert.equal(events!.n, 3)
  })
})
