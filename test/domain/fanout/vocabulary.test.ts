import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { fanoutStatusAfter } from '../../../src/domain/fanout/transitions.ts'
import {
  COVERAGE_STATUSES,
  DEFAULT_POLICY,
  type FANOUT_DIRECTIVES,
  type FANOUT_VERDICTS,
  withPolicyDefaults,
} from '../../../src/domain/fanout/vocabulary.ts'
import { hashJson } from '../../../src/domain/shared/canonical-json.ts'

describe('withPolicyDefaults', () => {
  it('fills every member of an empty policy', () => {
    assert.deepEqual(withPolicyDefaults({}), {
      resolve: [],
      source_priority: [],
      min_independent_sources: 1,
      on_qualifier_difference: 'halt',
      on_incomplete: 'halt',
      decomposition: 'warn',
    })
    assert.deepEqual(withPolicyDefaults(), withPolicyDefaults({}))
  })

  it('keeps the members given and fills the rest', () => {
    const policy = withPolicyDefaults({
      resolve: ['source_priority', 'corroboration'],
      on_incomplete: 'proceed',
    })
    assert.deepEqual(policy.resolve, ['source_priority', 'corroboration'])
    assert.equal(policy.on_incomplete, 'proceed')
    assert.equal(policy.on_qualifier_difference, 'halt')
  })

  it('treats a member given as undefined as omitted', () => {
    assert.equal(withPolicyDefaults({ min_independent_sources: undefined }).min_independent_sources, 1)
  })

  it('gives one digest to a policy written out in full and one left to its defaults', () => {
    const explicit = withPolicyDefaults({ ...DEFAULT_POLICY, resolve: [], source_priority: [] })
    assert.equal(hashJson(explicit), hashJson(withPolicyDefaults({})))
  })

  it('returns fresh arrays, never the input’s or the defaults’', () => {
    const resolve: ('corroboration' | 'source_priority')[] = ['corroboration']
    const policy = withPolicyDefaults({ resolve })
    policy.resolve.push('source_priority')
    assert.deepEqual(resolve, ['corroboration'])
    withPolicyDefaults().source_priority.push('x')
    assert.deepEqual(DEFAULT_POLICY.source_priority, [])
  })
})

describe('fanoutStatusAfter', () => {
  const cases: [(typeof FANOUT_VERDICTS)[number], (typeof FANOUT_DIRECTIVES)[number], string][] = [
    ['RECONCILED', 'PROCEED', 'decided'],
    ['CONTESTED', 'HALT', 'halted'],
    ['INCOMPLETE', 'HALT', 'halted'],
    ['INCOMPLETE', 'REEVALUATE', 'open'],
    ['HUMAN_RESOLVED', 'PROCEED', 'resolved'],
  ]
  for (const [verdict, directive, status] of cases) {
    it(`${verdict} + ${directive} → ${status}`, () =>
      assert.equal(fanoutStatusAfter(verdict, directive), status))
  }
})

describe('vocabulary', () => {
  it('has MISSING besides the four envelope statuses in coverage', () => {
    assert.deepEqual(COVERAGE_STATUSES, ['DONE', 'DONE_WITH_CONCERNS', 'NEEDS_CONTEXT', 'BLOCKED', 'MISSING'])
  })
})
