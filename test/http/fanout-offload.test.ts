import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { OFFLOAD_MIN_CLAIMS } from '../../src/cases/fanout/decision.ts'
import { verifyEnvelope } from '../../src/crypto/jws.ts'
import { LIMITS } from '../../src/domain/limits.ts'
import { canonicalJson, sha256 } from '../../src/domain/shared/canonical-json.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createFanout, submitResult } from '../helpers/fanout-fixtures.ts'
import { uniqueRun } from '../helpers/fixtures.ts'

/**
 * A large fan-out is decided in a worker thread (src/engine/decision-workers.ts): the event loop keeps answering
 * while thousands of claims are reconciled and their manifest canonicalized, and the manifest signed is the one
 * the same decision makes on the main thread. Small fan-outs keep being decided where they are asked.
 */

const cleanups: Array<() => unknown> = []
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})
const suite = { after: (fn: () => unknown) => void cleanups.push(fn) } as Parameters<typeof buildTestApp>[0]

let app: TestApp
let scout: string
before(async () => {
  app = await buildTestApp(suite)
  scout = await app.key('orchestrator', ['scout'])
})

const FACTS = ['f1', 'f2']

/** A fan-out of `subtasks` subtasks, each DONE with `perSubtask` claims spread over the facts, values disagreeing. */
async function filledFanout(subtasks: number, perSubtask: number): Promise<string> {
  const ids = Array.from({ length: subtasks }, (_, i) => `st_${i + 1}`)
  const fanout = await createFanout(app, scout, {
    orchestrator_id: 'scout',
    fanout_key: uniqueRun('offload'),
    question: 'What are the values?',
    facts: FACTS,
    subtasks: ids.map((subtask_id) => ({ subtask_id, facts: FACTS })),
  })
  for (const [s, subtask_id] of ids.entries()) {
    await submitResult(app, scout, fanout.fanout_id, {
      subtask_id,
      status: 'DONE',
      summary: 'done',
      evidence: ['notes'],
      claims: Array.from({ length: perSubtask }, (_, i) => ({
        fact: FACTS[i % FACTS.length],
        value: { amount: (s * perSubtask + i) % 7, note: `été ${i % 3}` },
        sources: [{ uri: `https://example.com/${subtask_id}/${i}` }],
      })),
    })
  }
  return fanout.fanout_id
}

async function assertSignedAsCanonical(envelope: {
  manifest: unknown
  manifest_digest: string
  jws: string
}): Promise<void> {
  const jcs = canonicalJson(envelope.manifest)
  assert.equal(envelope.manifest_digest, sha256(jcs))
  const jwks = (await app.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()
  const verified = await verifyEnvelope(envelope, jwks)
  assert.equal(verified.ok, true, JSON.stringify(verified))
}

describe('deciding a large fan-out off the main thread', () => {
  it('reconciles thousands of claims in a worker while /healthz keeps being answered', async () => {
    const workers = app.app.services.decisionWorkers!
    const perSubtask = LIMITS.claims_per_result
    const subtasks = Math.ceil(OFFLOAD_MIN_CLAIMS / perSubtask) + 1
    const fanoutId = await filledFanout(subtasks, perSubtask)
    const done = workers.tasksDone

    let answered = false
    const reconcile = app
      .request(scout, { method: 'POST', url: `/v1/fanouts/${fanoutId}/reconcile` })
      .finally(() => {
        answered = true
      })
    // While the decision is in the worker, the event loop is free: /healthz answers then, not after it.
    let healthzWhileDeciding = 0
    while (!answered) {
      const health = await app.app.inject({ method: 'GET', url: '/healthz' })
      assert.equal(health.statusCode, 200)
      if (workers.running > 0) healthzWhileDeciding += 1
      await new Promise((resolve) => setImmediate(resolve))
    }
    const response = await reconcile
    assert.equal(response.statusCode, 200, response.body)
    assert.equal(workers.tasksDone, done + 1, 'the decision was made by a worker')
    // A large envelope is sent as its bytes, with the same headers a small one gets.
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8')
    assert.equal(Number(response.headers['content-length']), Buffer.byteLength(response.body))
    assert.ok(healthzWhileDeciding > 0, '/healthz was answered while the worker decided')

    const envelope = response.json()
    assert.equal(envelope.manifest.coverage.claims_total ?? subtasks * perSubtask, subtasks * perSubtask)
    assert.equal(envelope.manifest.facts.length, FACTS.length)
    await assertSignedAsCanonical(envelope)

    // The stored manifest is served byte for byte as signed, and the same inputs give the same manifest.
    const again = await app.request(scout, { method: 'POST', url: `/v1/fanouts/${fanoutId}/reconcile` })
    assert.equal(again.statusCode, 200)
    assert.equal(again.json().manifest_digest, envelope.manifest_digest)
  })

  it('makes the manifest the main thread makes from the same inputs', async () => {
    const workers = app.app.services.decisionWorkers!
    const perSubtask = LIMITS.claims_per_result
    const subtasks = Math.ceil(OFFLOAD_MIN_CLAIMS / perSubtask)
    const offloaded = await filledFanout(subtasks, perSubtask)
    const done = workers.tasksDone
    const viaWorker = await app.request(scout, { method: 'POST', url: `/v1/fanouts/${offloaded}/reconcile` })
    assert.equal(workers.tasksDone, done + 1)

    // The same fan-out decided on the main thread (no decision workers): equal but for ids and time.
    const main = await filledFanout(subtasks, perSubtask)
    const services = app.app.services
    const saved = services.decisionWorkers
    services.decisionWorkers = undefined
    let onMain: Awaited<ReturnType<TestApp['request']>>
    try {
      onMain = await app.request(scout, { method: 'POST', url: `/v1/fanouts/${main}/reconcile` })
    } finally {
      services.decisionWorkers = saved
    }
    assert.equal(workers.tasksDone, done + 1)
    // What the decision made of the inputs (ids, times and digests of the two fan-outs differ).
    const decided = (manifest: Record<string, unknown>) =>
      canonicalJson({
        verdict: manifest.verdict,
        directive: manifest.directive,
        facts: manifest.facts,
        reasons: manifest.reasons,
      })
    const same = decided(viaWorker.json().manifest) === decided(onMain.json().manifest)
    assert.ok(same, 'the worker decided as the main thread does')
    await assertSignedAsCanonical(viaWorker.json())
  })

  it('decides a small fan-out where it is asked', async () => {
    const workers = app.app.services.decisionWorkers!
    const fanoutId = await filledFanout(2, 10)
    const done = workers.tasksDone
    const response = await app.request(scout, { method: 'POST', url: `/v1/fanouts/${fanoutId}/reconcile` })
    assert.equal(response.statusCode, 200, response.body)
    assert.equal(workers.tasksDone, done, 'no worker was asked')
    await assertSignedAsCanonical(response.json())
  })
})
