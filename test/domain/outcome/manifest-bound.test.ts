import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { type DecidedDecision, decide } from '../../../src/domain/outcome/decision.ts'
import { toManifestInterpretation } from '../../../src/domain/outcome/interpretation.ts'
import {
  type BoundInterpretation,
  firstInterpretationGrowth,
  grownBoundState,
  outcomeBoundState,
  outcomeManifestBound,
} from '../../../src/domain/outcome/manifest-bound.ts'
import { OUTCOME_READINGS } from '../../../src/domain/outcome/vocabulary.ts'
import { canonicalJson, hashJson, type JsonValue } from '../../../src/domain/shared/canonical-json.ts'

const hashOf = (i: number) => `sha256:${i.toString(16).padStart(64, '0')}`

/** Evidence versions as they grow: version v holds items 0 … sizes[v] − 1. */
function versions(sizes: number[]) {
  return sizes.map((size, v) => ({
    evidence_hash: hashOf(1_000_000 + v),
    item_hashes: Array.from({ length: size }, (_, i) => hashOf(i)),
  }))
}

interface Case {
  ids: string[]
  readings: (typeof OUTCOME_READINGS)[number][]
  criteria: (JsonValue | undefined)[]
  judged: number[]
  sizes: number[]
  actions: ({ kind: 'compensate'; resources: string[] } | null)[]
}

function check(c: Case) {
  const evidence = versions(c.sizes)
  const interpretations = c.ids.map((orchestrator_id, i) => {
    const version = evidence[c.judged[i]! % evidence.length]!
    const criterion = c.criteria[i]
    return {
      orchestrator_id,
      success_criterion_signature: criterion === undefined ? hashOf(7) : hashJson(criterion),
      success_criterion: criterion,
      outcome_interpretation: c.readings[i]!,
      evidence_hash: version.evidence_hash,
      evidence_item_hashes: version.item_hashes,
      intended_action: c.actions[i] ?? null,
      revision: 100,
      received_at: '2026-12-06T04:00:00.000Z',
    }
  })
  const decision = decide(
    {
      interpretations,
      expected_orchestrators: [],
      deadline_passed: false,
      has_deadline: false,
      arbiter_orchestrator_id: null,
      has_probe: false,
      fallback_policy: 'escalate',
      reevaluation_rounds: 0,
    },
    null,
  ) as DecidedDecision
  assert.equal(decision.kind, 'decided')
  const manifest = {
    kind: 'outcome',
    manifest_id: '00000000-0000-4000-8000-000000000000',
    outcome_id: '00000000-0000-4000-8000-000000000000',
    subagent_id: 'agent',
    run_id: 'run',
    issued_at: '2026-12-06T04:00:00.000Z',
    verdict: decision.verdict,
    directive: decision.directive,
    resolved_outcome: decision.resolved_outcome,
    subagent_outcome_evidence_hash: evidence.at(-1)!.evidence_hash,
    interpretations: decision.interpretations.map(toManifestInterpretation),
    interpretation_divergence_receipt: decision.interpretation_divergence_receipt,
    ground_truth_arbiter_predicate: null,
    action_owner: decision.action_owner,
    missing_orchestrators: decision.missing_orchestrators,
    supersedes: '00000000-0000-4000-8000-000000000000',
    resolution: null,
  }
  const actual = Buffer.byteLength(canonicalJson(manifest))
  const bound = outcomeManifestBound(
    { subagent_id: 'agent', run_id: 'run', expected_orchestrators: [], probe_params: null },
    interpretations.map(
      (i): BoundInterpretation => ({
        orchestrator_id: i.orchestrator_id,
        success_criterion_signature: i.success_criterion_signature,
        success_criterion: i.success_criterion,
        intended_action: i.intended_action,
        evidence_items: i.evidence_item_hashes.length,
        evidence_hash: i.evidence_hash,
      }),
    ),
  )
  assert.ok(actual <= bound, `manifest of ${actual} bytes over its bound of ${bound}`)
  // The one-statement path's growth, from the state of all but the last orchestrator, bounds the exact bound.
  const bounded: BoundInterpretation[] = interpretations.map((i) => ({
    orchestrator_id: i.orchestrator_id,
    success_criterion_signature: i.success_criterion_signature,
    success_criterion: i.success_criterion,
    intended_action: i.intended_action,
    evidence_items: i.evidence_item_hashes.length,
    evidence_hash: i.evidence_hash,
  }))
  const outcome = { subagent_id: 'agent', run_id: 'run', expected_orchestrators: [], probe_params: null }
  const last = bounded.at(-1)!
  const grown = grownBoundState(
    outcomeBoundState(outcome, bounded.slice(0, -1)),
    firstInterpretationGrowth(last),
    Math.max(...c.sizes),
    false,
  )
  assert.ok(grown.manifest_bound >= bound, `grown ${grown.manifest_bound} under the exact ${bound}`)
  assert.equal(grown.interpreting, bounded.length)
  return { actual, bound }
}

const jsonArb: fc.Arbitrary<JsonValue> = fc.letrec<{ json: JsonValue }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small' },
    fc.integer(),
    fc.string({ maxLength: 6 }),
    fc.constant(null),
    fc.array(tie('json'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 4 }), tie('json'), { maxKeys: 4 }),
  ),
})).json

describe('the bound on an outcome’s next manifest', () => {
  it('holds for any interpretations: criteria, readings, evidence versions, actions', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 16 }).chain((n) =>
          fc.record({
            ids: fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { minLength: n, maxLength: n }),
            readings: fc.array(fc.constantFrom(...OUTCOME_READINGS), { minLength: n, maxLength: n }),
            criteria: fc.array(fc.option(jsonArb, { nil: undefined }), { minLength: n, maxLength: n }),
            judged: fc.array(fc.nat(), { minLength: n, maxLength: n }),
            sizes: fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 4 }).map((steps) => {
              let total = 0
              return steps.map((step) => (total += step))
            }),
            actions: fc.array(
              fc.option(
                fc.record({
                  kind: fc.constant('compensate' as const),
                  resources: fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 }),
                }),
                { nil: null },
              ),
              { minLength: n, maxLength: n },
            ),
          }),
        ),
        (c) => {
          check(c as Case)
        },
      ),
      { numRuns: 200 },
    )
  })

  it('holds for the adversarial inputs: deep criteria of tiny leaves, versions a thousand items apart', () => {
    const deep = (seed: number): JsonValue => {
      let value: JsonValue = Array.from({ length: 1500 }, (_, i) => (i + seed) % 10)
      for (let depth = 0; depth < 40; depth++) value = [value]
      return value
    }
    const ids = Array.from({ length: 16 }, (_, i) => `${'\u0001'.repeat(40)}${i}`)
    const { actual, bound } = check({
      ids,
      readings: ids.map((_, i) => (i % 2 === 0 ? 'success' : 'failure')),
      criteria: ids.map((_, i) => (i < 4 ? deep(i) : undefined)),
      judged: ids.map((_, i) => i % 2),
      sizes: [1, 1000],
      actions: ids.map(() => null),
    })
    assert.ok(actual > 4 * 1024 * 1024, `the unbounded manifest would be ${actual} bytes`)
    assert.ok(bound < 2 * actual, `the bound (${bound}) is within 2x of it`)
  })
})
