import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import pg from 'pg'
import { request } from 'undici'
import { typeParsers } from '../../src/db/pool.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { freePort, startChildServer } from '../helpers/child-server.ts'
import { createTestDatabase } from '../helpers/database.ts'
import { createOutcome, evaluate, interpret } from '../helpers/fixtures.ts'
import { WebhookReceiver } from '../helpers/webhook-receiver.ts'

// Several replicas on one database need the real PostgreSQL server (the embedded one serves one process).
const onPostgres = process.env.TEST_DATABASE_URL !== undefined
const skip = onPostgres ? false : 'several replicas need TEST_DATABASE_URL (a real PostgreSQL server)'

async function call(baseUrl: string, key: string, method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await request(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.body.text()
  return { status: response.statusCode, json: text === '' ? null : JSON.parse(text) }
}

async function deliveryStatuses(connectionString: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString, types: typeParsers })
  await client.connect()
  try {
    const { rows } = await client.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status',
    )
    return Object.fromEntries(rows.map((row) => [row.status, row.n]))
  } finally {
    await client.end()
  }
}

describe('webhooks across replicas', { skip }, () => {
  for (const when of ['right after the manifest committed', 'mid-attempt'] as const) {
    it(`delivers through another replica when the one that decided is killed -9 ${when}`, async (t) => {
      const receiver = await WebhookReceiver.start()
      t.after(() => receiver.close())
      // The first request is held: a replica killed then dies with the attempt in flight and its lease taken.
      receiver.behave = (req) =>
        receiver.requests.indexOf(req) === 0 ? { kind: 'hang' } : { kind: 'status', status: 204 }
      const db = await createTestDatabase()
      const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-webhook-kill-'))
      const admin = randomBytes(30).toString('base64url').slice(0, 40)
      const child = await startChildServer({
        port: await freePort(),
        env: {
          DATABASE_URL: db.connectionString,
          ARBITER_DATA_DIR: dataDir,
          ARBITER_BOOTSTRAP_ADMIN_KEY: admin,
          ARBITER_RATE_LIMIT_PER_MINUTE: '0',
          ARBITER_WEBHOOK_ALLOW_PRIVATE: 'true',
          ARBITER_WEBHOOK_ATTEMPT_TIMEOUT_MS: '1000',
          ARBITER_WEBHOOK_RETRY_SCHEDULE_MS: '100',
          LOG_LEVEL: 'warn',
        },
      })
      t.after(async () => {
        await child.killHard()
        await db.stop()
        await rm(dataDir, { recursive: true, force: true })
      })
      const hook = await call(child.baseUrl, admin, 'POST', '/v1/webhooks', {
        url: receiver.url,
        events: ['manifest.issued'],
      })
      assert.equal(hook.status, 201)
      const key = await call(child.baseUrl, admin, 'POST', '/v1/admin/keys', {
        role: 'orchestrator',
        orchestrator_ids: ['orch-a'],
        label: 'a',
      })
      const orch = key.json.key as string
      const outcome = await call(child.baseUrl, orch, 'POST', '/v1/outcomes', {
        subagent_id: 'refund-agent',
        run_id: `run-${randomBytes(4).toString('hex')}`,
        evidence: [{ kind: 'exit_code', content: 0 }],
        expected_orchestrators: ['orch-a'],
      })
      assert.equal(outcome.status, 201)
      const id = outcome.json.outcome_id as string
      await call(child.baseUrl, orch, 'POST', `/v1/outcomes/${id}/interpretations`, {
        orchestrator_id: 'orch-a',
        outcome_interpretation: 'success',
        success_criterion: { require: ['exit_code == 0'] },
      })
      const decided = await call(child.baseUrl, orch, 'POST', `/v1/outcomes/${id}/evaluate`)
      assert.equal(decided.status, 200)
      if (when === 'mid-attempt') await receiver.until((requests) => requests.length >= 1)
      await child.killHard()
      const survivor = await buildTestApp(t, {
        database: db,
        config: {
          webhooks: { allowPrivate: true, listen: true, pollMs: 50, attemptTimeoutMs: 1000, leaseMs: 2000 },
        },
      })
      await receiver.until((requests) => requests.some((req) => receiver.requests.indexOf(req) > 0))
      const ids = new Set(receiver.requests.map((req) => req.id))
      assert.equal(ids.size, 1, 'every attempt carries the one event id')
      for (;;) {
        const statuses = await deliveryStatuses(survivor.db.connectionString)
        if (statuses.succeeded === 1) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      t.diagnostic(`${when}: the receiver got ${receiver.requests.length} request(s) of the one event`)
    })
  }

  it('3 replicas, 1,000 manifests: every event arrives, never two concurrent attempts of one delivery', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    receiver.behave = () => ({ kind: 'status', status: 204, delayMs: Math.floor(Math.random() * 5) })
    const settings = { allowPrivate: true, listen: true, pollMs: 200, concurrency: 16 }
    const first = await buildTestApp(t, { config: { webhooks: settings } })
    const replicas: TestApp[] = [first]
    for (let i = 0; i < 2; i++) {
      replicas.push(await buildTestApp(t, { database: first.db, config: { webhooks: settings } }))
    }
    const hook = await first.request(first.adminKey, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: receiver.url, events: ['manifest.issued'] },
    })
    assert.equal(hook.statusCode, 201)
    const key = await first.key('orchestrator', ['orch-a'])
    const total = 1000
    let next = 0
    const manifestIds = new Set<string>()
    const decidedAt = new Map<string, number>()
    const worker = async () => {
      for (let i = next++; i < total; i = next++) {
        const replica = replicas[i % replicas.length]!
        const outcome = await createOutcome(replica, key, { expected_orchestrators: ['orch-a'] })
        await interpret(replica, key, outcome.outcome_id, {
          orchestrator_id: 'orch-a',
          outcome_interpretation: 'success',
        })
        const manifestId = (await evaluate(replica, key, outcome.outcome_id)).manifest.manifest_id as string
        manifestIds.add(manifestId)
        decidedAt.set(manifestId, Date.now())
      }
    }
    await Promise.all(Array.from({ length: 12 }, worker))
    assert.equal(manifestIds.size, total)
    await receiver.until((requests) => new Set(requests.map((req) => req.id)).size >= total)
    const delivered = new Set<string>()
    for (const req of receiver.requests) delivered.add(JSON.parse(req.body).data.manifest.manifest_id)
    assert.deepEqual(
      [...manifestIds].filter((id) => !delivered.has(id)),
      [],
    )
    assert.equal(
      receiver.requests.filter((req) => req.concurrentSameId > 0).length,
      0,
      'no delivery was attempted twice at once',
    )
    for (;;) {
      const statuses = await deliveryStatuses(first.db.connectionString)
      if (statuses.succeeded === total) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const duplicates = receiver.requests.length - total
    // Reported, not asserted: from the decision's answer to the receiver's first request of its event.
    const firstSeen = new Map<string, number>()
    for (const req of receiver.requests) {
      const id = JSON.parse(req.body).data.manifest.manifest_id as string
      if (!firstSeen.has(id)) firstSeen.set(id, req.receivedAt)
    }
    const lags = [...firstSeen].map(([id, at]) => at - decidedAt.get(id)!).sort((x, y) => x - y)
    const quantile = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))]
    t.diagnostic(
      `3 replicas, ${total} manifests: ${receiver.requests.length} requests, ${duplicates} duplicate(s); ` +
        `lag from the evaluate answer to the receiver p50 ${quantile(0.5)} ms, p99 ${quantile(0.99)} ms`,
    )
  })
})
