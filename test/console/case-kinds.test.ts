import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { kindOptions } from '../../console/src/feed-filter.ts'
import { caseOf, type Escalation, escalationTarget, type ManifestSummary } from '../../console/src/shapes.ts'

const common = {
  manifest_id: 'm-1',
  issued_at: '2026-12-06T12:00:00Z',
  verdict: 'AGREED',
  directive: 'PROCEED',
  supersedes: null,
}
const escalation: Escalation = {
  subagent_id: null,
  run_id: null,
  status: 'open',
  manifest_id: 'm-1',
  verdict: 'CRITERIA_DIFFER',
  interpretation_divergence_receipt: null,
  opened_at: '2026-12-06T12:00:00Z',
  resolved_at: null,
}

describe("a manifest's case", () => {
  it('links the three known kinds under their labels', () => {
    const cases: [ManifestSummary, string, string, string][] = [
      [{ ...common, outcome_id: 'o-1', subagent_id: 'a', run_id: 'r' }, '#/outcomes/o-1', 'a / r', 'outcome'],
      [
        { ...common, outcome_id: 'o-2', subagent_id: 'a', run_id: 'r', kind: 'outcome' },
        '#/outcomes/o-2',
        'a / r',
        'outcome',
      ],
      [
        { ...common, kind: 'reconciliation', fanout_id: 'f-1', fanout_key: 'k' },
        '#/fanouts/f-1',
        'k',
        'fan-out',
      ],
      [{ ...common, kind: 'review', review_id: 'v-1', review_key: 'rk' }, '#/reviews/v-1', 'rk', 'review'],
    ]
    for (const [manifest, href, label, kindLabel] of cases) {
      assert.deepEqual(caseOf(manifest), { href, label, kindLabel })
    }
  })

  it('shows a kind it does not know by its own name, without a link and not as an outcome', () => {
    assert.deepEqual(caseOf({ ...common, kind: 'tally' }), { href: null, label: 'm-1', kindLabel: 'tally' })
  })
})

describe("an escalation's case", () => {
  it('links outcomes (also without `case`) and fan-outs', () => {
    assert.deepEqual(escalationTarget({ ...escalation, outcome_id: 'o-1' }), {
      href: '#/outcomes/o-1',
      kindLabel: 'outcome',
    })
    assert.deepEqual(escalationTarget({ ...escalation, case: 'fanout', fanout_id: 'f-1' }), {
      href: '#/fanouts/f-1',
      kindLabel: 'fan-out',
    })
  })

  it('shows a kind it does not know by its own name, without a link', () => {
    assert.deepEqual(escalationTarget({ ...escalation, case: 'tally' }), { href: null, kindLabel: 'tally' })
  })
})

describe("the feed's kind filter", () => {
  const known = [
    ['', 'All kinds'],
    ['outcome', 'Outcomes'],
    ['reconciliation', 'Fan-outs'],
    ['review', 'Reviews'],
  ]

  it('offers the known kinds when nothing was seen', () => {
    assert.deepEqual(kindOptions([]), known)
  })

  it('adds every other kind seen, once and sorted, under its own name', () => {
    const seen = [
      { ...common, kind: 'tally' },
      { ...common, kind: 'ballot' },
      { ...common, kind: 'tally' },
      { ...common, kind: 'review' },
      common,
    ]
    assert.deepEqual(kindOptions(seen), [...known, ['ballot', 'ballot'], ['tally', 'tally']])
  })

  it('keeps the chosen kind offered when none of it is left in the feed', () => {
    assert.deepEqual(kindOptions([], 'tally'), [...known, ['tally', 'tally']])
  })
})
