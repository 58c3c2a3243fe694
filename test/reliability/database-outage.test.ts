import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createTestDatabase } from '../helpers/database.ts'
import { CRITERION, EVIDENCE, uniqueRun } from '../helpers/fixtures.ts'
import { assertStoreIntegrity } from '../helpers/integrity.ts'
import { problemViolation, runLoad, type Sample, waitUntil } from '../helpers/load.ts'
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts'

/**
 * The database goes away under load and comes back. The shared PostgreSQL server is never stopped: a TCP proxy
 * between the app and the database is cut instead (every connection reset, new ones refused).
 */

const CUT_MS = 1_500
// Fail fast: a request that starts while the database is unreachable is answered well inside this bound
// (the pool's connect timeout is 5 s; a refused connection must not wait for it).
const FAST_MS = 2_000
const RECOVERY_MS = 10_000

interface Phase {
  name: string
  from: number
  to: number
}

async function setup(t: Parameters<typeof buildTestApp>[0]) {
  const db = await createTestDatabase()
  const target = new URL(db.connectionString)
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
  const app = await buildTestApp(t, {
    database: db,
    config: { connectionString: proxy.proxiedUrl(db.connectionString) },
  })
  // After hooks run in the order they were added: the app closes first, then the proxy and the database.
  t.after(async () => {
    await proxy.close()
    await db.stop()
  })
  const orchestrator = await app.key('orchestrator', ['orch-a'])
  const ops = await app.key('ops')
  return { app, proxy, orchestrator, ops }
}

/** Orchestrator traffic: create an outcome, interpret it, evaluate it, list outcomes. Every answer is kept. */
function startTraffic(app: TestApp, orchestrator: string, samples: Sample[], acked: Set<string>) {
  const send = async (label: string, options: Parameters<TestApp['request']>[1]) => {
    const startedAt = Date.now()
    const response = await app.request(orchestrator, options)
    samples.push({
      label,
      status: response.statusCode,
      headers: response.headers,
      body: response.body,
      startedAt,
      endedAt: Date.now(),
    })
    return response
  }
  return runLoad(6, async () => {
    const created = await send('create', {
      method: 'POST',
      url: '/v1/outcomes',
      payload: { subagent_id: 'outage-agent', run_id: uniqueRun('outage'), evidence: EVIDENCE },
    })
    if (created.statusCode !== 201) return void (await sleep(20))
    const id = created.json().outcome_id as string
    acked.add(id)
    const interpreted = await send('interpret', {
      method: 'POST',
      url: `/v1/outcomes/${id}/interpretations`,
      payload: { orchestrator_id: 'orch-a', outcome_interpretation: 'success', success_criterion: CRITERION },
    })
    if (interpreted.statusCode !== 201) return
    await send('evaluate', { method: 'POST', url: `/v1/outcomes/${id}/evaluate` })
    await send('list', { method: 'GET', url: '/v1/outcomes?limit=5' })
  })
}

async function cutFor(app: TestApp, proxy: TcpProxy, phases: Phase[], probes: Sample[]) {
  const from = Date.now()
  proxy.cut()
  // While the database is gone: liveness stays up, readiness says 503, both answer at once.
  while (Date.now() - from < CUT_MS) {
    for (const url of ['/healthz', '/readyz']) {
      const startedAt = Date.now()
      const response = await app.request(null, { method: 'GET', url })
      probes.push({
        label: url,
        status: response.statusCode,
        headers: response.headers,
        body: response.body,
        startedAt,
        endedAt: Date.now(),
      })
    }
    await sleep(100)
  }
  phases.push({ name: 'cut', from, to: Date.now() })
  proxy.restore()
  const restoredAt = Date.now()
  // No restart, no intervention: the pool reconnects by itself.
  const recoveryMs = await waitUntil(
    'readyz 200 after the database came back',
    async () => (await app.request(null, { method: 'GET', url: '/readyz' })).statusCode === 200,
    { timeoutMs: RECOVERY_MS, intervalMs: 50 },
  )
  return { restoredAt, recoveryMs }
}

describe('database outage', () => {
  it('answers 503 problem+json with Retry-After while the database is unreachable, then recovers by itself, audit log whole', async (t) => {
    const { app, proxy, orchestrator, ops } = await setup(t)
    const samples: Sample[] = []
    const probes: Sample[] = []
    const phases: Phase[] = []
    const acked = new Set<string>()
    const traffic = startTraffic(app, orchestrator, samples, acked)
    t.after(() => traffic.stop())

    const recoveries: number[] = []
    for (let round = 0; round < 2; round++) {
      await sleep(600)
      const { recoveryMs } = await cutFor(app, proxy, phases, probes)
      recoveries.push(recoveryMs)
    }
    await waitUntil('traffic to succeed again', async () =>
      samples.some((s) => s.startedAt > phases.at(-1)!.to + recoveries.at(-1)! && s.status < 300),
    )
    await traffic.stop()
    assert.deepEqual(traffic.errors, [], 'no request threw instead of answering')

    // 1. Nothing but success or a 503 problem with Retry-After: no 500, no hang.
    const unexpected = samples.filter((s) => s.status >= 300 && s.status !== 503)
    assert.deepEqual(
      unexpected.map((s) => `${s.label} ${s.status} ${s.body}`),
      [],
      'only 2xx or 503 under an outage',
    )
    const unavailable = samples.filter((s) => s.status === 503)
    for (const s of unavailable) {
      assert.equal(problemViolation(s), null, `${s.label}: ${s.body}`)
      assert.match(String(s.headers['retry-after']), /^\d+$/, 'a 503 tells the client when to retry')
    }

    // 2. During the cut every request failed, and failed fast.
    const duringCut = samples.filter((s) => phases.some((p) => s.startedAt >= p.from && s.endedAt <= p.to))
    assert.ok(duringCut.length >= 10, `requests were made during the cuts (${duringCut.length})`)
    assert.deepEqual(new Set(duringCut.map((s) => s.status)), new Set([503]))
    assert.ok(proxy.stats().refused > 0, 'the app tried to reconnect while the database was gone')
    const slowest = Math.max(...duringCut.map((s) => s.endedAt - s.startedAt))
    assert.ok(slowest < FAST_MS, `slowest 503 took ${slowest} ms`)

    // 3. Liveness stayed up, readiness reported the outage.
    const healthz = probes.filter((p) => p.label === '/healthz')
    const readyz = probes.filter((p) => p.label === '/readyz')
    assert.ok(healthz.length > 0 && healthz.every((p) => p.status === 200), 'healthz stays 200')
    assert.ok(readyz.length > 0 && readyz.every((p) => p.status === 503), 'readyz is 503 during the cut')
    for (const p of readyz) assert.equal(problemViolation(p), null, p.body)

    // 4. Recovered without a restart, and nothing acknowledged was lost.
    assert.ok(
      recoveries.every((ms) => ms < RECOVERY_MS),
      `recovered in ${recoveries.join(', ')} ms`,
    )
    const afterRecovery = samples.filter((s) => s.startedAt > phases.at(-1)!.to + recoveries.at(-1)!)
    assert.ok(
      afterRecovery.some((s) => s.status === 201),
      'writes succeed again after the database is back',
    )
    for (const id of acked) {
      const outcome = await app.request(orchestrator, { method: 'GET', url: `/v1/outcomes/${id}` })
      assert.equal(outcome.statusCode, 200, `acknowledged outcome ${id} survived`)
    }
    // 5. The audit sequencer, cut off mid-batch under load, resumed by itself: every committed change is in the
    // log, gapless, and the log verifies.
    const verify = await app.request(ops, { method: 'GET', url: '/v1/audit/verify' })
    assert.equal(verify.statusCode, 200, verify.body)
    assert.equal(verify.json().ok, true, verify.body)
    assert.ok(app.app.services.auditLog.sequencer.isLeader, 'the sequencer holds its lease again')
    const integrity = await assertStoreIntegrity(app.db.connectionString)
    assert.equal(integrity.auditRecords, verify.json().head_seq)
    t.diagnostic(
      `requests ${samples.length}, 503 ${unavailable.length} (during cuts ${duringCut.length}, slowest ${slowest} ms), recovery ${recoveries.join('/')} ms, outcomes kept ${acked.size}`,
    )
  })
})
