import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { canonicalJson } from '../../../src/domain/shared/canonical-json.ts'
import { reconcile } from '../../../src/domain/fanout/reconcile.ts'
import { applyResolution, contestedFacts, resolutionErrors } from '../../../src/domain/fanout/resolution.ts'
import {
  blocked,
  claim,
  decided,
  FLOOR,
  factOf,
  fanout,
  input,
  result,
  SIXTY_K,
  VANTAGE_RESULTS,
  vantageFanout,
} from './builders.ts'

const VANTAGE_HALT = decided(reconcile(input(vantageFanout(), VANTAGE_RESULTS)))

/** Two contested facts (a, c), one agreed (b). */
const TWO_CONTESTED = decided(
  reconcile(
    input(fanout({ s1: ['a', 'b', 'c'] }), [
      result('s1', [claim('a', 1), claim('a', 2), claim('b', 1), claim('c', 1), claim('c', 2)]),
    ]),
  ),
)

describe('contestedFacts', () => {
  it('lists the contested facts, sorted', () => {
    assert.deepEqual(contestedFacts(TWO_CONTESTED), ['a', 'c'])
    assert.deepEqual(contestedFacts(VANTAGE_HALT), [FLOOR])
  })
})

describe('resolutionErrors', () => {
  it('accepts every contested fact answered once, an answer or null', () => {
    assert.deepEqual(
      resolutionErrors(TWO_CONTESTED, [
        { fact: 'c', answer: null },
        { fact: 'a', answer: { value: 2 } },
      ]),
      [],
    )
  })

  it('refuses a contested fact left unanswered, at /facts', () => {
    assert.deepEqual(resolutionErrors(TWO_CONTESTED, [{ fact: 'a', answer: null }]), [
      { path: '/facts', message: 'contested fact "c" needs an answer (null for "no answer")' },
    ])
  })

  it('refuses a fact that is not contested, at /facts/<i>/fact', () => {
    const errors = resolutionErrors(TWO_CONTESTED, [
      { fact: 'a', answer: null },
      { fact: 'b', answer: null },
      { fact: 'c', answer: null },
    ])
    assert.deepEqual(errors, [
      {
        path: '/facts/1/fact',
        message: 'this fact is agreed, not contested; only contested facts are answered',
      },
    ])
  })

  it('refuses a fact the fan-out does not have', () => {
    const errors = resolutionErrors(VANTAGE_HALT, [
      { fact: FLOOR, answer: null },
      { fact: 'vantage.nope', answer: null },
    ])
    assert.deepEqual(errors, [{ path: '/facts/1/fact', message: 'not a fact of this fan-out' }])
  })

  it('refuses a fact answered twice, at the second answer', () => {
    const errors = resolutionErrors(VANTAGE_HALT, [
      { fact: FLOOR, answer: null },
      { fact: FLOOR, answer: { value: 1 } },
    ])
    assert.deepEqual(errors, [{ path: '/facts/1/fact', message: 'this fact is answered more than once' }])
  })

  it('accepts facts: [] for a HALT without contested facts', () => {
    const incomplete = decided(
      reconcile(input(fanout({ s1: ['a'], s2: ['a'] }), [result('s1', [claim('a', 1)]), blocked('s2')])),
    )
    assert.equal(incomplete.directive, 'HALT')
    assert.deepEqual(resolutionErrors(incomplete, []), [])
  })
})

describe('applyResolution', () => {
  const newLogos = { value: SIXTY_K, effective_date: '2025-01-22', qualifiers: { applies_to: 'new_logos' } }

  it('resolves the Vantage floor as the human answered it, keeping every position and claim', () => {
    const resolved = applyResolution(VANTAGE_HALT, [{ fact: FLOOR, answer: newLogos }])
    assert.equal(resolved.verdict, 'HUMAN_RESOLVED')
    assert.equal(resolved.directive, 'PROCEED')
    assert.equal(resolved.final, true)
    const floor = factOf({ ...VANTAGE_HALT, facts: resolved.facts }, FLOOR)
    assert.equal(floor.status, 'resolved')
    assert.equal(floor.rule, 'human')
    assert.equal(floor.reason, null)
    assert.deepEqual(floor.answer, newLogos)
    const before = factOf(VANTAGE_HALT, FLOOR)
    assert.deepEqual(floor.positions, before.positions)
    assert.deepEqual(floor.claims, before.claims)
    assert.deepEqual(floor.conflicts, before.conflicts)
  })

  it('copies the HALT’s coverage and reasons', () => {
    const resolved = applyResolution(VANTAGE_HALT, [{ fact: FLOOR, answer: null }])
    assert.deepEqual(resolved.coverage, VANTAGE_HALT.coverage)
    assert.deepEqual(resolved.reasons, VANTAGE_HALT.reasons)
  })

  it('records a null answer as resolved with no answer', () => {
    const resolved = applyResolution(VANTAGE_HALT, [{ fact: FLOOR, answer: null }])
    assert.deepEqual(
      [resolved.facts[0]!.status, resolved.facts[0]!.rule, resolved.facts[0]!.answer],
      ['resolved', 'human', null],
    )
  })

  it('fills an answer’s absent effective_date and qualifiers, in canonical member order', () => {
    const resolved = applyResolution(VANTAGE_HALT, [
      { fact: FLOOR, answer: { value: { per: 'year', amount: 60000 } } },
    ])
    const answer = resolved.facts[0]!.answer
    assert.deepEqual(answer, { value: { amount: 60000, per: 'year' }, effective_date: null, qualifiers: {} })
    assert.equal(JSON.stringify(answer), canonicalJson(answer))
  })

  it('leaves the facts that were not contested as they were', () => {
    const resolved = applyResolution(TWO_CONTESTED, [
      { fact: 'a', answer: { value: 1 } },
      { fact: 'c', answer: null },
    ])
    assert.deepEqual(resolved.facts[1], TWO_CONTESTED.facts[1])
    assert.deepEqual(
      resolved.facts.map((fact) => fact.status),
      ['resolved', 'agreed', 'resolved'],
    )
  })

  it('does not change the HALT it resolves', () => {
    const snapshot = structuredClone(VANTAGE_HALT)
    const resolved = applyResolution(VANTAGE_HALT, [{ fact: FLOOR, answer: newLogos }])
    resolved.coverage.subtasks.pop()
    resolved.facts[0]!.positions.pop()
    assert.deepEqual(VANTAGE_HALT, snapshot)
  })

  it('refuses a resolution with errors and a manifest that is not a HALT', () => {
    assert.throws(() => applyResolution(VANTAGE_HALT, []), RangeError)
    const reconciled = decided(reconcile(input(fanout({ s1: ['a'] }), [result('s1', [claim('a', 1)])])))
    assert.throws(() => applyResolution(reconciled, []), /only a HALT/)
  })
})
