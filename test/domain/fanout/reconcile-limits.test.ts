import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type { SubmittedClaim } from '../../../src/domain/fanout/claims.ts'
import { reconcile } from '../../../src/domain/fanout/reconcile.ts'
import type { FanoutPolicyInput } from '../../../src/domain/fanout/vocabulary.ts'
import { MAX_COMPARED_POSITIONS, MAX_LISTED_CONFLICTS } from '../../../src/domain/limits.ts'
import { claim, decided, factOf, fanout, input, result } from './builders.ts'

/** `count` claims of `fact`, each with its own value: `count` distinct positions. */
function distinctClaims(fact: string, count: number, from = 0): SubmittedClaim[] {
  return Array.from({ length: count }, (_, i) => claim(fact, from + i))
}

const pairsOf = (positions: number) => (positions * (positions - 1)) / 2

/** One subtask owning every fact, claiming `positions[i]` distinct values of fact `f<i>` (facts sort as listed). */
function reconcileCounts(positions: number[], policy: FanoutPolicyInput = {}) {
  const facts = positions.map((_, i) => `f${String(i).padStart(2, '0')}`)
  const claims = positions.flatMap((count, i) => distinctClaims(facts[i]!, count))
  return decided(
    reconcile(
      input(fanout({ s1: facts }, { resolve: ['highest_confidence'], ...policy }), [result('s1', claims)]),
    ),
  )
}

describe('reconcile: positions compared pairwise', () => {
  it(`compares a fact of ${MAX_COMPARED_POSITIONS} distinct positions pair by pair`, () => {
    const decision = reconcileCounts([MAX_COMPARED_POSITIONS])
    const fact = decision.facts[0]!
    assert.equal(fact.positions.length, MAX_COMPARED_POSITIONS)
    assert.equal(fact.conflicts.length, pairsOf(MAX_COMPARED_POSITIONS))
    assert.equal(fact.reason, 'no_rule_decides')
  })

  it(`contests a fact of ${MAX_COMPARED_POSITIONS + 1} positions as too_many_positions, its positions and claims still listed`, () => {
    const decision = reconcileCounts([MAX_COMPARED_POSITIONS + 1])
    const fact = decision.facts[0]!
    assert.equal(fact.status, 'contested')
    assert.equal(fact.reason, 'too_many_positions')
    assert.equal(fact.answer, null)
    assert.equal(fact.rule, null)
    assert.deepEqual(fact.variants, [])
    assert.deepEqual(fact.conflicts, [])
    assert.equal(fact.positions.length, MAX_COMPARED_POSITIONS + 1)
    assert.equal(fact.claims.length, MAX_COMPARED_POSITIONS + 1)
    assert.ok(fact.positions.every((position) => position.lost_by === null && position.claims.length === 1))
    assert.equal(decision.verdict, 'CONTESTED')
    assert.equal(decision.directive, 'HALT')
    assert.deepEqual(decision.reasons, [{ code: 'contested_fact', subject: fact.fact }])
  })

  it('tries no rule on such a fact, even one that would decide it', () => {
    // Every claim but one has confidence 0.1: highest_confidence would choose the one at 0.9.
    const claims = distinctClaims('f', MAX_COMPARED_POSITIONS + 1).map((c, i) => ({
      ...c,
      confidence: i === 3 ? 0.9 : 0.1,
    }))
    const decision = decided(
      reconcile(input(fanout({ s1: ['f'] }, { resolve: ['highest_confidence'] }), [result('s1', claims)])),
    )
    assert.equal(factOf(decision, 'f').reason, 'too_many_positions')
    // One fewer position, and the rule decides.
    const fewer = decided(
      reconcile(
        input(fanout({ s1: ['f'] }, { resolve: ['highest_confidence'] }), [
          result('s1', claims.slice(0, MAX_COMPARED_POSITIONS)),
        ]),
      ),
    )
    assert.equal(factOf(fewer, 'f').status, 'resolved')
  })

  it('contests under keep_all too, with no variants, however the qualifiers split the positions', () => {
    const claims = distinctClaims('f', MAX_COMPARED_POSITIONS + 1).map((c, i) => ({
      ...c,
      qualifiers: { region: i % 2 === 0 ? 'eu' : 'us' },
    }))
    const decision = decided(
      reconcile(
        input(fanout({ s1: ['f'] }, { on_qualifier_difference: 'keep_all' }), [result('s1', claims)]),
      ),
    )
    const fact = factOf(decision, 'f')
    assert.equal(fact.reason, 'too_many_positions')
    assert.deepEqual(fact.variants, [])
    assert.deepEqual(fact.conflicts, [])
  })

  it('counts distinct positions, not claims: a thousand claims repeating two positions make one conflict', () => {
    const claims = Array.from({ length: 1000 }, (_, i) => claim('f', i % 2))
    const fact = factOf(decided(reconcile(input(fanout({ s1: ['f'] }), [result('s1', claims)]))), 'f')
    assert.equal(fact.positions.length, 2)
    assert.equal(fact.conflicts.length, 1)
    assert.equal(fact.reason, 'no_rule_decides')
  })

  it('reconciles the attack that exhausted the heap (one fact, two subtasks, 500 distinct values each) at once', () => {
    const definition = fanout({ s1: ['f'], s2: ['f'] })
    const results = [result('s1', distinctClaims('f', 500)), result('s2', distinctClaims('f', 500, 500))]
    const started = performance.now()
    const fact = factOf(decided(reconcile(input(definition, results))), 'f')
    assert.equal(fact.reason, 'too_many_positions')
    assert.equal(fact.positions.length, 1000)
    assert.deepEqual(fact.conflicts, [])
    // Linear work: well under a second on any machine (the quadratic list took tens of seconds and the heap).
    assert.ok(performance.now() - started < 2000)
  })
})

describe('reconcile: pairs listed in one manifest', () => {
  it(`lists up to ${MAX_LISTED_CONFLICTS} pairs, facts taking them in fact order`, () => {
    // 4 × 120 + 15 + 3 + 1 + 1 = 500 exactly: every fact compared; one more pair is one too many.
    const decision = reconcileCounts([16, 16, 16, 16, 6, 3, 2, 2, 2])
    const reasons = decision.facts.map((fact) => fact.reason)
    assert.deepEqual(reasons.slice(0, 8), Array(8).fill('no_rule_decides'))
    assert.equal(reasons[8], 'too_many_positions')
    assert.deepEqual(decision.facts[8]!.conflicts, [])
    const listed = decision.facts.reduce((total, fact) => total + fact.conflicts.length, 0)
    assert.equal(listed, MAX_LISTED_CONFLICTS)
  })

  it('passes over a fact whose pairs would pass the total, and still compares later facts that fit', () => {
    // 4 × 120 = 480 listed; 120 more would pass 500; the next fact's 10 pairs fit.
    const decision = reconcileCounts([16, 16, 16, 16, 16, 5])
    assert.deepEqual(
      decision.facts.map((fact) => [fact.reason, fact.conflicts.length]),
      [
        ['no_rule_decides', 120],
        ['no_rule_decides', 120],
        ['no_rule_decides', 120],
        ['no_rule_decides', 120],
        ['too_many_positions', 0],
        ['no_rule_decides', 10],
      ],
    )
  })

  it('does not spend the budget on facts too large to compare', () => {
    const decision = reconcileCounts([40, 16, 16, 16, 16])
    assert.deepEqual(
      decision.facts.map((fact) => fact.reason),
      ['too_many_positions', 'no_rule_decides', 'no_rule_decides', 'no_rule_decides', 'no_rule_decides'],
    )
  })

  it('holds for any number of positions per fact: the bounds, and nothing else, decide which facts are compared', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 24 }), { minLength: 1, maxLength: 12 }), (counts) => {
        const decision = reconcileCounts(counts)
        let left = MAX_LISTED_CONFLICTS
        let listed = 0
        counts.forEach((count, i) => {
          const fact = decision.facts[i]!
          assert.equal(fact.positions.length, count)
          assert.equal(fact.claims.length, count)
          const fits = count <= MAX_COMPARED_POSITIONS && pairsOf(count) <= left
          if (count === 0) assert.equal(fact.status, 'unclaimed')
          else if (!fits) {
            assert.equal(fact.status, 'contested')
            assert.equal(fact.reason, 'too_many_positions')
            assert.deepEqual(fact.conflicts, [])
            assert.equal(fact.answer, null)
          } else {
            assert.notEqual(fact.reason, 'too_many_positions')
            assert.equal(fact.conflicts.length, pairsOf(count))
          }
          if (fits) left -= pairsOf(count)
          listed += fact.conflicts.length
        })
        assert.ok(listed <= MAX_LISTED_CONFLICTS)
      }),
      { numRuns: 200 },
    )
  })

  it('decides the same whatever order the claims arrived in', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 6 }),
        fc.nat(),
        (counts, seed) => {
          const facts = counts.map((_, i) => `f${i}`)
          const claims = counts.flatMap((count, i) => distinctClaims(facts[i]!, count))
          const shuffled = [...claims].sort(
            (a, b) =>
              ((JSON.stringify(a).length * 31 + seed) % 7) - ((JSON.stringify(b).length * 31 + seed) % 7),
          )
          const definition = fanout({ s1: facts })
          const first = decided(reconcile(input(definition, [result('s1', claims)])))
          const second = decided(reconcile(input(definition, [result('s1', shuffled)])))
          assert.deepEqual(
            first.facts.map((fact) => [fact.reason, fact.conflicts]),
            second.facts.map((fact) => [fact.reason, fact.conflicts]),
          )
        },
      ),
      { numRuns: 50 },
    )
  })
})
