import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type {
  ClaimSource,
  Qualifiers,
  ReconcileInput,
  SubmittedClaim,
  SubtaskResult,
} from '../../../src/domain/fanout/claims.ts'
import { reconcile } from '../../../src/domain/fanout/reconcile.ts'
import type { ReconciliationDecision } from '../../../src/domain/fanout/reconciliation.ts'
import { POLICY_RULES, withPolicyDefaults } from '../../../src/domain/fanout/vocabulary.ts'
import { canonicalJson } from '../../../src/domain/shared/canonical-json.ts'
import { decided, result } from './builders.ts'

// ---------------------------------------------------------------------------
// Generators: small pools, so that positions merge, sources repeat and rules tie often.

const FACTS = ['f1', 'f2', 'f3']
const SUBTASKS = ['s1', 's2', 's3', 's4']

const sourceArb: fc.Arbitrary<ClaimSource> = fc.record(
  {
    uri: fc.constantFrom(
      'https://vantage.com/pricing',
      'HTTPS://Vantage.com:443/pricing/?utm_source=x',
      'https://vantage.com/press#q1',
      'crm://opp/118204',
      'crm://Opp/118205/',
      'opp 118206 note',
    ),
    content_digest: fc.constantFrom(`sha256:${'a'.repeat(64)}`, `sha256:${'b'.repeat(64)}`),
    observed_at: fc.constantFrom(
      '2025-03-04T09:00:00Z',
      '2025-03-04T11:00:00+02:00',
      '2025-01-22T00:00:00.5Z',
    ),
  },
  { requiredKeys: ['uri'] },
)

const claimArb = (fact: fc.Arbitrary<string>): fc.Arbitrary<SubmittedClaim> =>
  fc.record(
    {
      fact,
      value: fc.constantFrom<SubmittedClaim['value']>(60000, 48000, { amount: 60000, per: 'year' }, 'n/a'),
      effective_date: fc.constantFrom(null, '2025-01-22', '2025-03-01'),
      qualifiers: fc.constantFrom<Qualifiers>(
        {},
        { applies_to: 'new_logos' },
        { applies_to: 'renewals' },
        { region: 'eu' },
      ),
      confidence: fc.constantFrom(null, 0.5, 0.66, 0.81),
      sources: fc.array(sourceArb, { minLength: 1, maxLength: 3 }),
    },
    { requiredKeys: ['fact', 'value', 'sources'] },
  )

const policyArb = fc.record({
  resolve: fc.uniqueArray(fc.constantFrom(...POLICY_RULES), { maxLength: 4 }),
  source_priority: fc.subarray(['crm://', 'https://vantage.com/', 'opp']),
  min_independent_sources: fc.integer({ min: 1, max: 3 }),
  on_qualifier_difference: fc.constantFrom('halt' as const, 'keep_all' as const),
  on_incomplete: fc.constantFrom('halt' as const, 'proceed' as const),
  decomposition: fc.constant('warn' as const),
})

const resultArb = (subtask_id: string): fc.Arbitrary<SubtaskResult> =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .array(claimArb(fc.constantFrom(...FACTS)), { maxLength: 5 })
        .map((claims) => result(subtask_id, claims)),
    },
    {
      weight: 1,
      arbitrary: fc
        .array(claimArb(fc.constantFrom(...FACTS)), { maxLength: 3 })
        .map((claims) =>
          result(subtask_id, claims, { status: 'DONE_WITH_CONCERNS', concerns: ['thin'], late: true }),
        ),
    },
    {
      weight: 1,
      arbitrary: fc.constant(result(subtask_id, [], { status: 'NEEDS_CONTEXT', blocking_question: 'q?' })),
    },
    {
      weight: 1,
      arbitrary: fc.constant(result(subtask_id, [], { status: 'BLOCKED', blocking_reason: 'down' })),
    },
  )

const inputArb: fc.Arbitrary<ReconcileInput> = fc
  .record({
    owners: fc.tuple(...SUBTASKS.map(() => fc.subarray(FACTS))),
    returned: fc.subarray(SUBTASKS, { minLength: 1 }),
    policy: policyArb,
    closed: fc.boolean(),
  })
  .chain(({ owners, returned, policy, closed }) =>
    fc.tuple(...returned.map(resultArb)).map(
      (results): ReconcileInput => ({
        fanout: {
          facts: FACTS,
          subtasks: SUBTASKS.map((subtask_id, i) => ({ subtask_id, facts: owners[i]! })),
          policy: withPolicyDefaults(policy),
        },
        results,
        deadline_passed: closed,
        closed: !closed,
      }),
    ),
  )

/** A shuffle driven by fast-check, so failures shrink and replay. */
const permutationArb = <T>(items: readonly T[]): fc.Arbitrary<T[]> =>
  fc.array(fc.nat(), { minLength: items.length, maxLength: items.length }).map((keys) =>
    items
      .map((item, i) => ({ item, key: keys[i]! * items.length + i }))
      .sort((x, y) => x.key - y.key)
      .map(({ item }) => item),
  )

const jcs = (value: unknown) => canonicalJson(value)

// ---------------------------------------------------------------------------

describe('reconcile (properties)', () => {
  it('gives a byte-identical decision (JCS) for any order of results', () => {
    fc.assert(
      fc.property(
        inputArb.chain((input) => fc.tuple(fc.constant(input), permutationArb(input.results))),
        ([input, shuffled]) => {
          assert.equal(jcs(reconcile({ ...input, results: shuffled })), jcs(reconcile(input)))
        },
      ),
      { numRuns: 300 },
    )
  })

  it('gives the same decision, up to the renamed claim refs, for any order of claims within results', () => {
    const withShuffles = inputArb.chain((input) =>
      fc.tuple(
        fc.constant(input),
        fc.tuple(...input.results.map((r) => permutationArb(r.claims.map((_, index) => index)))),
      ),
    )
    fc.assert(
      fc.property(withShuffles, ([input, orders]) => {
        // orders[r][k] = the original index of the claim now at index k of result r.
        const shuffled = input.results.map((r, i) => ({
          ...r,
          claims: orders[i]!.map((index) => r.claims[index]!),
        }))
        const originalRef = new Map<string, string>()
        input.results.forEach((r, i) => {
          orders[i]!.forEach((original, now) => {
            originalRef.set(`${r.subtask_id}#${now}`, `${r.subtask_id}#${original}`)
          })
        })
        const expected = reconcile(input)
        const actual = reconcile({ ...input, results: shuffled })
        if (actual.kind !== 'decided' || expected.kind !== 'decided') {
          assert.deepEqual(actual, expected)
          return
        }
        const rename = (ref: string) => originalRef.get(ref)!
        const sorted = (refs: string[]) => refs.map(rename).sort()
        const renamed: ReconciliationDecision = {
          ...actual,
          facts: actual.facts.map((fact) => ({
            ...fact,
            positions: fact.positions.map((position) => ({ ...position, claims: sorted(position.claims) })),
            claims: fact.claims
              .map((entry) => ({ ...entry, claim_ref: rename(entry.claim_ref) }))
              .sort((x, y) => (x.claim_ref < y.claim_ref ? -1 : x.claim_ref > y.claim_ref ? 1 : 0)),
            echoes: fact.echoes.map((echo) => ({ ...echo, claims: sorted(echo.claims) })),
          })),
        }
        assert.equal(jcs(renamed), jcs(expected))
      }),
      { numRuns: 300 },
    )
  })

  it('lists every fan-out fact exactly once, sorted', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const decision = reconcile(input)
        if (decision.kind === 'pending') return
        assert.deepEqual(
          decision.facts.map((fact) => fact.fact),
          [...input.fanout.facts].sort(),
        )
      }),
    )
  })

  it('drops no claim and no losing position: every claim sits in a listed position', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const decision = reconcile(input)
        if (decision.kind === 'pending') return
        for (const fact of decision.facts) {
          const submitted = input.results.flatMap((r) =>
            r.claims.flatMap((claim, index) =>
              claim.fact === fact.fact ? [`${r.subtask_id}#${index}`] : [],
            ),
          )
          assert.deepEqual(
            fact.claims.map((entry) => entry.claim_ref),
            [...submitted].sort(),
          )
          const positionOfRef = new Map(
            fact.positions.flatMap((position) =>
              position.claims.map((ref) => [ref, position.position_id] as const),
            ),
          )
          assert.equal(positionOfRef.size, fact.claims.length)
          for (const entry of fact.claims) assert.equal(positionOfRef.get(entry.claim_ref), entry.position_id)
          // The answer, when there is one, is one of the positions.
          if (fact.answer !== null) {
            assert.ok(
              fact.positions.some(
                (position) =>
                  jcs({ ...position, position_id: 0, claims: 0, independent_sources: 0, lost_by: 0 }) ===
                  jcs({ ...fact.answer, position_id: 0, claims: 0, independent_sources: 0, lost_by: 0 }),
              ),
            )
          }
        }
      }),
    )
  })

  it('marks losers only with the deciding rule, and only when an answer stands', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const decision = reconcile(input)
        if (decision.kind === 'pending') return
        for (const fact of decision.facts) {
          const rules = new Set([fact.rule, ...fact.variants.map((variant) => variant.rule)])
          for (const position of fact.positions) {
            if (position.lost_by !== null) assert.ok(rules.has(position.lost_by))
          }
          if (
            fact.status === 'agreed' ||
            fact.status === 'unclaimed' ||
            (fact.status === 'contested' && fact.variants.length === 0)
          ) {
            assert.ok(fact.positions.every((position) => position.lost_by === null))
          }
          if (fact.status === 'resolved') {
            assert.equal(fact.positions.filter((position) => position.lost_by === null).length, 1)
          }
        }
      }),
    )
  })

  it('never raises independent_sources when a claim echoing an existing claim is added', () => {
    // An echo repeats a claim already made, from (some of) the sources that claim cites. A claim of a
    // different position citing an existing source is not an echo: it is that source's support for
    // another position, and that position rightly gains it.
    const withEcho = inputArb
      .filter((input) => input.results.some((r) => r.claims.length > 0))
      .chain((input) => {
        const withClaims = input.results.filter((r) => r.claims.length > 0)
        return fc.tuple(
          fc.constant(input),
          fc.constantFrom(...withClaims),
          fc.constantFrom(
            ...input.results.filter((r) => r.status === 'DONE' || r.status === 'DONE_WITH_CONCERNS'),
          ),
          fc.nat(),
          fc.constantFrom(null, 0.1, 0.99),
        )
      })
    fc.assert(
      fc.property(withEcho, ([input, cited, into, pick, confidence]) => {
        const citedClaim = cited.claims[pick % cited.claims.length]!
        const echo: SubmittedClaim = {
          ...citedClaim,
          confidence,
          sources: citedClaim.sources.slice(pick % citedClaim.sources.length),
        }
        const results = input.results.map((r) => (r === into ? { ...r, claims: [...r.claims, echo] } : r))
        const before = decided(reconcile({ ...input, closed: true }))
        const after = decided(reconcile({ ...input, results, closed: true }))
        const sourcesByPosition = (decision: ReconciliationDecision) =>
          new Map(
            decision.facts
              .find((fact) => fact.fact === citedClaim.fact)!
              .positions.map((position) => [
                jcs({
                  value: position.value,
                  effective_date: position.effective_date,
                  qualifiers: position.qualifiers,
                }),
                position.independent_sources,
              ]),
          )
        const afterCounts = sourcesByPosition(after)
        for (const [position, count] of sourcesByPosition(before)) {
          assert.ok(
            afterCounts.get(position)! <= count,
            `${position}: ${count} → ${afterCounts.get(position)}`,
          )
        }
      }),
      { numRuns: 300 },
    )
  })

  it('is pending exactly when a subtask is missing and neither deadline nor owner ended the wait', () => {
    fc.assert(
      fc.property(inputArb, fc.boolean(), fc.boolean(), (input, deadline_passed, closed) => {
        const decision = reconcile({ ...input, deadline_passed, closed })
        const missing = input.results.length < input.fanout.subtasks.length
        assert.equal(decision.kind === 'pending', missing && !deadline_passed && !closed)
      }),
    )
  })
})
