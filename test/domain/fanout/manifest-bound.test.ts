import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type {
  FanoutDefinition,
  Qualifiers,
  SubmittedClaim,
  SubtaskResult,
} from '../../../src/domain/fanout/claims.ts'
import { checkDecomposition } from '../../../src/domain/fanout/decomposition.ts'
import { fanoutManifestBase, resultManifestWeight } from '../../../src/domain/fanout/manifest-bound.ts'
import { reconcile } from '../../../src/domain/fanout/reconcile.ts'
import { withPolicyDefaults } from '../../../src/domain/fanout/vocabulary.ts'
import { LIMITS } from '../../../src/domain/limits.ts'
import { canonicalJson, sha256 } from '../../../src/domain/shared/canonical-json.ts'
import { decided, fanout, input, result } from './builders.ts'

const ORCHESTRATOR = 'o'.repeat(200)
const FANOUT_KEY = 'k'.repeat(200)

/** The signed manifest's canonical size, built as the fan-out kind and the engine build it (the longest ids and times). */
function manifestBytes(definition: FanoutDefinition, results: SubtaskResult[], closed = true): number {
  const decision = decided(reconcile(input(definition, results, { closed })))
  const manifest = {
    fanout_id: '00000000-0000-4000-8000-000000000000',
    orchestrator_id: ORCHESTRATOR,
    fanout_key: FANOUT_KEY,
    verdict: decision.verdict,
    directive: decision.directive,
    policy: definition.policy,
    policy_digest: sha256(canonicalJson(definition.policy)),
    coverage: decision.coverage,
    facts: decision.facts,
    reasons: decision.reasons,
    resolution: null,
    kind: 'reconciliation',
    manifest_id: '00000000-0000-4000-8000-000000000000',
    issued_at: '2026-12-06T04:00:00.000Z',
    supersedes: '00000000-0000-4000-8000-000000000000',
  }
  return Buffer.byteLength(canonicalJson(manifest))
}

function boundOf(definition: FanoutDefinition, results: SubtaskResult[]): number {
  const base = fanoutManifestBase({
    orchestrator_id: ORCHESTRATOR,
    fanout_key: FANOUT_KEY,
    facts: definition.facts,
    subtasks: definition.subtasks,
    policy: definition.policy,
    overlaps: checkDecomposition(definition.facts, definition.subtasks).overlaps,
  })
  return results.reduce(
    (total, r) =>
      total +
      resultManifestWeight({
        subtask_id: r.subtask_id,
        claims: r.claims,
        blocking_question: r.blocking_question,
        blocking_reason: r.blocking_reason,
        concerns: r.concerns,
      }),
    base,
  )
}

function assertBounded(definition: FanoutDefinition, results: SubtaskResult[]) {
  const actual = manifestBytes(definition, results)
  const bound = boundOf(definition, results)
  assert.ok(actual <= bound, `manifest of ${actual} bytes over its bound of ${bound}`)
  return { actual, bound }
}

/** Characters JCS writes six bytes each, and a pointer's `~` and `/` that it doubles. */
const ESCAPED = '\u0001'
const worstKey = (i: number) => `${String(i)}~/`.padEnd(LIMITS.qualifier_key_length, ESCAPED)
const worstQualifiers = (seed: number): Qualifiers =>
  Object.fromEntries(
    Array.from({ length: LIMITS.qualifiers_per_claim }, (_, i) => [
      worstKey(i + seed * 8),
      `${seed}`.padEnd(LIMITS.qualifier_value_length, ESCAPED),
    ]),
  )

describe('the bound on a fan-out’s next manifest', () => {
  it('holds for any results: every value, qualifier and source of small pools, any policy', () => {
    const claimArb = (facts: string[]) =>
      fc.record({
        fact: fc.constantFrom(...facts),
        value: fc.oneof(
          fc.integer({ min: 0, max: 30 }),
          fc.string({ maxLength: 20 }),
          fc.constant({ a: [1, 2] }),
        ),
        effective_date: fc.constantFrom(null, '2025-01-22'),
        qualifiers: fc.dictionary(
          fc.string({ minLength: 1, maxLength: 6 }),
          fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean()),
          { maxKeys: 3 },
        ),
        confidence: fc.option(fc.double({ min: 0, max: 1, noNaN: true })),
        sources: fc.array(
          fc.record(
            {
              uri: fc.oneof(fc.webUrl(), fc.string({ minLength: 1, maxLength: 30 })),
              excerpt: fc.string({ maxLength: 20 }),
              content_digest: fc.constant(`sha256:${'a'.repeat(64)}`),
              observed_at: fc.constant('2025-03-04T09:00:00Z'),
            },
            { requiredKeys: ['uri'] },
          ),
          { minLength: 1, maxLength: 3 },
        ),
      }) as fc.Arbitrary<SubmittedClaim>
    const facts = ['f1', 'f2', 'f3']
    fc.assert(
      fc.property(
        fc.array(fc.array(claimArb(facts), { maxLength: 25 }), { minLength: 1, maxLength: 4 }),
        fc.constantFrom('halt', 'keep_all') as fc.Arbitrary<'halt' | 'keep_all'>,
        (claimLists, mode) => {
          const owners = Object.fromEntries(claimLists.map((_, i) => [`s${i}`, facts]))
          const definition = fanout(owners, { on_qualifier_difference: mode, resolve: ['corroboration'] })
          assertBounded(
            definition,
            claimLists.map((claims, i) => result(`s${i}`, claims)),
          )
        },
      ),
      { numRuns: 150 },
    )
  })

  it('holds for qualifiers that JCS escapes sixfold, 16 positions to a fact (every pair listed)', () => {
    const facts = Array.from({ length: 5 }, (_, i) => `f${i}`)
    const definition = fanout({ s1: facts, s2: facts })
    const claims = (offset: number) =>
      facts.flatMap((fact) =>
        Array.from({ length: 8 }, (_, i) => ({
          fact,
          value: offset + i,
          qualifiers: worstQualifiers(offset + i),
          sources: [{ uri: `https://example.com/${ESCAPED.repeat(10)}/${offset + i}` }],
        })),
      )
    const { actual, bound } = assertBounded(definition, [result('s1', claims(0)), result('s2', claims(100))])
    assert.ok(actual > 1_000_000, `the adversarial manifest is large (${actual} bytes)`)
    assert.ok(bound < 3 * actual, `and the bound is within 3x of it (${bound})`)
  })

  it('holds under keep_all, where each qualifier set carries its own variant', () => {
    const definition = fanout({ s1: ['f'], s2: ['f'] }, { on_qualifier_difference: 'keep_all' })
    const claims = (offset: number) =>
      Array.from({ length: 16 }, (_, i) => ({
        fact: 'f',
        value: { blob: ESCAPED.repeat(200), n: offset + i },
        qualifiers: worstQualifiers(i % 4),
        sources: [{ uri: `crm://x/${offset + i}` }],
      }))
    assertBounded(definition, [result('s1', claims(0)), result('s2', claims(1000))])
  })

  it('holds for the largest fan-out the limits allow: 100 subtasks, 5,000 claims of 17+ positions a fact', () => {
    const subtasks = Array.from({ length: 100 }, (_, i) => `st_${String(i).padStart(3, '0')}`)
    const facts = Array.from({ length: 10 }, (_, i) => `fact.${i}`)
    const definition = fanout(Object.fromEntries(subtasks.map((s) => [s, facts])))
    const results = subtasks.map((subtask, s) =>
      result(
        subtask,
        Array.from({ length: 50 }, (_, i) => ({
          fact: facts[i % facts.length]!,
          value: { amount: (s * 50 + i) % 40, note: 'x'.repeat(60) },
          confidence: 0.5,
          sources: [{ uri: `https://source.example/${subtask}/${i}`, excerpt: 'e'.repeat(40) }],
        })),
      ),
    )
    const { actual, bound } = assertBounded(definition, results)
    assert.ok(bound <= LIMITS.manifest_bytes, `such a fan-out is accepted (bound ${bound}, actual ${actual})`)
  })

  it('counts what a result’s coverage entry carries: blocking questions, reasons and concerns', () => {
    const definition = fanout({ s1: ['f'], s2: ['f'], s3: ['f'] })
    const long = ESCAPED.repeat(4000)
    assertBounded(definition, [
      result('s1', [], { status: 'NEEDS_CONTEXT', blocking_question: long }),
      result('s2', [], { status: 'BLOCKED', blocking_reason: long }),
      result('s3', [{ fact: 'f', value: 1, sources: [{ uri: 'x' }] }], {
        status: 'DONE_WITH_CONCERNS',
        concerns: Array(50).fill(long),
      }),
    ])
  })

  it('is larger for a policy of many long prefixes, carried once', () => {
    const policy = withPolicyDefaults({
      source_priority: Array.from({ length: 100 }, (_, i) => `${ESCAPED.repeat(100)}${i}`),
    })
    const definition: FanoutDefinition = { ...fanout({ s1: ['f'] }), policy }
    assertBounded(definition, [result('s1', [{ fact: 'f', value: 1, sources: [{ uri: 'x' }] }])])
  })
})
