import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { listedEvidenceItems, OFFLOAD_MIN_EVIDENCE_ITEMS } from '../../src/cases/outcome/decision.ts'
import { verifyEnvelope } from '../../src/crypto/jws.ts'
import { canonicalJson, sha256 } from '../../src/domain/shared/canonical-json.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createOutcome, evaluate, interpret } from '../helpers/fixtures.ts'

/**
 * A large outcome — many evidence items, judged on versions far apart — is decided in a worker thread
 * (src/engine/decision-workers.ts), and the manifest signed is the one the same decision makes on the main thread.
 * Small outcomes keep being decided where they are asked.
 */

const cleanups: Array<() => unknown> = []
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})
const suite = { after: (fn: () => unknown) => void cleanups.push(fn) } as Parameters<typeof buildTestApp>[0]

let app: TestApp
let orchestrators: string
before(async () => {
  app = await buildTestApp(suite)
  orchestrators = await app.key('orchestrator', ['orch-a', 'orch-b', 'orch-c', 'orch-d'])
})

const item = (i: number) => ({ kind: 'log', content: { line: i, text: `event ${i}` } })

/**
 * orch-a judges the first evidence version (one item) as a failure; orch-b, orch-c and orch-d judge the version
 * `items` later as a success, under another criterion: the receipt lists the items between the versions.
 */
async function outcomeOnVersionsApart(items: number): Promise<string> {
  const outcome = await createOutcome(app, orchestrators, { evidence: [item(0)] })
  await interpret(app, orchestrators, outcome.outcome_id, {
    orchestrator_id: 'orch-a',
    outcome_interpretation: 'failure',
    evidence_hash: outcome.evidence_hash,
  })
  const appended = await app.request(orchestrators, {
    method: 'POST',
    url: `/v1/outcomes/${outcome.outcome_id}/evidence`,
    payload: { evidence: Array.from({ length: items }, (_, i) => item(i + 1)) },
  })
  assert.equal(appended.statusCode, 201, appended.body)
  for (const orchestrator_id of ['orch-b', 'orch-c', 'orch-d']) {
    await interpret(app, orchestrators, outcome.outcome_id, {
      orchestrator_id,
      outcome_interpretation: 'success',
      success_criterion: { require: ['exit_code == 0'] },
    })
  }
  return outcome.outcome_id
}

async function assertSignedAsCanonical(envelope: {
  manifest: unknown
  manifest_digest: string
  jws: string
}) {
  assert.equal(envelope.manifest_digest, sha256(canonicalJson(envelope.manifest)))
  const jwks = (await app.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()
  const verified = await verifyEnvelope(envelope, jwks)
  assert.equal(verified.ok, true, JSON.stringify(verified))
}

/** What the decision made of the inputs (the ids, times and digests of two outcomes differ). */
function decided(manifest: Record<string, unknown>): string {
  const receipt = manifest.interpretation_divergence_receipt as { kind: string; pairs: unknown[] }
  return canonicalJson({
    verdict: manifest.verdict,
    directive: manifest.directive,
    action_owner: manifest.action_owner,
    receipt_kind: receipt.kind,
    pairs: receipt.pairs,
  })
}

describe('deciding a large outcome off the main thread', () => {
  it('counts the evidence items the interpretations list', () => {
    const interpretation = (items: number) => ({
      evidence_item_hashes: Array.from({ length: items }, String),
    })
    assert.equal(
      listedEvidenceItems({ interpretations: [interpretation(1), interpretation(999)] } as never),
      1000,
    )
  })

  it('decides in a worker the manifest the main thread makes from the same inputs', async () => {
    const workers = app.app.services.decisionWorkers!
    const items = Math.ceil(OFFLOAD_MIN_EVIDENCE_ITEMS / 3)
    const offloaded = await outcomeOnVersionsApart(items)
    const done = workers.tasksDone
    const viaWorker = await evaluate(app, orchestrators, offloaded)
    assert.equal(workers.tasksDone, done + 1, 'the decision was made by a worker')
    assert.equal(viaWorker.manifest.directive, 'HALT')
    const pairs = viaWorker.manifest.interpretation_divergence_receipt.pairs as {
      evidence_divergence: { only_in_b: string[] } | null
    }[]
    assert.ok(pairs.some((pair) => (pair.evidence_divergence?.only_in_b.length ?? 0) === items))
    await assertSignedAsCanonical(viaWorker)

    const onMainThread = await outcomeOnVersionsApart(items)
    const services = app.app.services
    const saved = services.decisionWorkers
    services.decisionWorkers = undefined
    let main: Awaited<ReturnType<typeof evaluate>>
    try {
      main = await evaluate(app, orchestrators, onMainThread)
    } finally {
      services.decisionWorkers = saved
    }
    assert.equal(workers.tasksDone, done + 1)
    assert.equal(
      decided(viaWorker.manifest),
      decided(main.manifest),
      'the worker decided as the main thread does',
    )

    // The same inputs give the same manifest, served as signed.
    const again = await evaluate(app, orchestrators, offloaded)
    assert.equal(again.manifest_digest, viaWorker.manifest_digest)
  })

  it('decides a small outcome where it is asked', async () => {
    const workers = app.app.services.decisionWorkers!
    const outcomeId = await outcomeOnVersionsApart(5)
    const done = workers.tasksDone
    const envelope = await evaluate(app, orchestrators, outcomeId)
    assert.equal(workers.tasksDone, done, 'no worker was asked')
    await assertSignedAsCanonical(envelope)
  })
})
