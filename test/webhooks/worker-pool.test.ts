import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Pool } from 'pg'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { decideOne, registerWebhook, setWebhookDisabled } from '../helpers/webhook-fixtures.ts'
import { WebhookReceiver } from '../helpers/webhook-receiver.ts'

/*
 * The delivery worker's queries: on a pool of its own, never on the connections requests wait for; and none at
 * all while no webhook is enabled, on a worker that is woken when one is (a LISTEN connection on PostgreSQL, the
 * process itself on the embedded database).
 */

const register = (t: TestApp, url: string) => registerWebhook(t, { url })

/** How many times the pool lent a connection (each query of the worker's is one) from now on. */
function queriesOn(pool: Pool): { n: number } {
  const count = { n: 0 }
  pool.on('acquire', () => {
    count.n += 1
  })
  return count
}

/** Waits until no query is sent for `windowMs`; fails after `withinMs`. */
async function quiet(seen: { n: number }, windowMs = 300, withinMs = 5_000) {
  const deadline = Date.now() + withinMs
  for (;;) {
    const before = seen.n
    await sleep(windowMs)
    if (seen.n === before) return
    assert.ok(Date.now() < deadline, 'the worker kept querying')
  }
}

/** Waits until the worker sends a query (woken before any decision); fails after `withinMs`. */
async function grows(seen: { n: number }, withinMs = 3_000) {
  const before = seen.n
  const deadline = Date.now() + withinMs
  while (seen.n === before) {
    assert.ok(Date.now() < deadline, 'the worker was not woken')
    await sleep(20)
  }
}

describe('the delivery worker', () => {
  it('claims, attempts and records on a pool of its own, while every request connection is taken', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const deciding = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, deliver: false } } })
    const hook = await register(deciding, receiver.url)
    const delivering = await buildTestApp(t, {
      database: deciding.db,
      config: { dbPoolMax: 1, webhooks: { allowPrivate: true, pollMs: 20 } },
    })
    // The delivering app's one request connection is taken, as by a request that holds it, until the end.
    const held = await delivering.app.db.connect()
    try {
      const a = await deciding.key('orchestrator', ['orch-a'])
      await decideOne(deciding, a)
      const deadline = Date.now() + 5_000
      for (;;) {
        const listed = await deciding.request(deciding.adminKey, {
          method: 'GET',
          url: `/v1/webhooks/${hook.webhook_id}/deliveries`,
        })
        if (listed.json().items[0]?.status === 'succeeded') break
        assert.ok(Date.now() < deadline, 'the delivery was not made and recorded')
        await sleep(25)
      }
      assert.equal(receiver.requests.length, 1)
    } finally {
      held.release()
    }
  })

  it('sends no query while no webhook is enabled, and wakes when one is created or enabled again', {
    timeout: 30_000,
  }, async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const onPostgres = process.env.TEST_DATABASE_URL !== undefined && process.env.TEST_DATABASE_URL !== ''
    const app = await buildTestApp(t, {
      config: {
        webhooks: { allowPrivate: true, pollMs: 20, listen: onPostgres, soleProcess: !onPostgres },
      },
    })
    // On PostgreSQL another replica registers the webhook: its NOTIFY wakes this one. The embedded database serves
    // one process, which wakes its own worker.
    const admin = onPostgres
      ? await buildTestApp(t, {
          database: app.db,
          config: { webhooks: { allowPrivate: true, deliver: false } },
        })
      : app
    const onWorker = queriesOn(app.app.webhooks.workerDb)
    await quiet(onWorker)
    const idle = onWorker.n
    await sleep(1_000)
    assert.equal(onWorker.n, idle, 'no query over an idle second')

    const a = await admin.key('orchestrator', ['orch-a'])
    const hook = await register(admin, receiver.url)
    await grows(onWorker)
    await decideOne(admin, a)
    await receiver.until((requests) => requests.length >= 1)
    const enabled = onWorker.n
    await sleep(300)
    assert.ok(onWorker.n > enabled, 'it polls while a webhook is enabled')

    await setWebhookDisabled(admin, hook.webhook_id, true)
    await quiet(onWorker)
    const idleAgain = onWorker.n
    await sleep(1_000)
    assert.equal(onWorker.n, idleAgain, 'no query over an idle second once it is disabled')

    await setWebhookDisabled(admin, hook.webhook_id, false)
    await grows(onWorker)
    await decideOne(admin, a)
    await receiver.until((requests) => requests.length >= 2)
  })
  it('looks again every idleCheckMs while idle, should its LISTEN connection be lost unnoticed', {
    timeout: 30_000,
  }, async (t) => {
    const onPostgres = process.env.TEST_DATABASE_URL !== undefined && process.env.TEST_DATABASE_URL !== ''
    const app = await buildTestApp(t, {
      config: {
        webhooks: { pollMs: 20, idleCheckMs: 300, listen: onPostgres, soleProcess: !onPostgres },
      },
    })
    const onWorker = queriesOn(app.app.webhooks.workerDb)
    await sleep(500)
    const idle = onWorker.n
    await sleep(1_500)
    const checks = onWorker.n - idle
    // Each check: a claim, whether a webhook is enabled, the sweep of disabled webhooks' deliveries.
    assert.ok(checks >= 3, `${checks} queries over an idle 1.5 s`)
    assert.ok(checks <= 6 * 4, `${checks} queries over an idle 1.5 s: it polls`)
  })
})
