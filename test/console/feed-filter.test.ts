import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { type FeedFilter, isFiltered, matchesFilter, NO_FILTER } from '../../console/src/feed-filter.ts'

const NOW = Date.parse('2026-12-06T12:00:00Z')
const minutesAgo = (m: number) => new Date(NOW - m * 60_000).toISOString()
const outcome = {
  manifest_id: 'm1',
  verdict: 'CRITERIA_DIFFER',
  directive: 'HALT',
  supersedes: null,
  subagent_id: 'refund-agent',
  issued_at: minutesAgo(3),
}
const review = { ...outcome, kind: 'review' as const, verdict: 'ADVISORY', subagent_id: undefined }
const old = { ...outcome, issued_at: minutesAgo(20) }
const filter = (change: Partial<FeedFilter>): FeedFilter => ({ ...NO_FILTER, ...change })

describe('the feed filter', () => {
  const cases: [string, Partial<FeedFilter>, typeof outcome | typeof review, boolean][] = [
    ['no filter keeps everything of the hour', {}, outcome, true],
    ['a manifest without kind is an outcome', { kind: 'outcome' }, outcome, true],
    ['another kind is left out', { kind: 'review' }, outcome, false],
    ['the kind matches', { kind: 'review' }, review, true],
    ['the verdict matches', { verdict: 'CRITERIA_DIFFER' }, outcome, true],
    ['another verdict is left out', { verdict: 'AGREED' }, outcome, false],
    ['the sub-agent matches exactly', { subagent: 'refund-agent' }, outcome, true],
    ['a prefix of the sub-agent does not', { subagent: 'refund' }, outcome, false],
    ['a manifest without sub-agent is left out by one', { subagent: 'refund-agent' }, review, false],
    ['within the time range', { withinMinutes: 5 }, outcome, true],
    ['before the time range', { withinMinutes: 15 }, old, false],
    ['the hour holds it', { withinMinutes: 60 }, old, true],
  ]
  for (const [name, change, manifest, expected] of cases) {
    it(name, () => assert.equal(matchesFilter(manifest, filter(change), NOW), expected))
  }

  it('knows when it narrows the feed', () => {
    assert.equal(isFiltered(NO_FILTER), false)
    assert.equal(isFiltered(filter({ withinMinutes: 5 })), true)
    assert.equal(isFiltered(filter({ subagent: 'x' })), true)
  })
})
