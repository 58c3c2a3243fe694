import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { decisionsPerMinute } from '../../console/src/decision-buckets.ts'

const NOW = Date.parse('2026-11-30T12:00:30Z')
const at = (iso: string) => iso

describe('decisionsPerMinute', () => {
  it('has one bucket per minute of the window, the current minute last', () => {
    const { minutes } = decisionsPerMinute([], NOW, 60)
    assert.equal(minutes.length, 60)
    assert.equal(minutes.at(-1), Date.parse('2026-11-30T12:00:00Z') / 1000)
    assert.equal(minutes[0], Date.parse('2026-11-30T11:01:00Z') / 1000)
  })

  it('counts each verdict in its minute, series sorted by verdict', () => {
    const { series } = decisionsPerMinute(
      [
        { issued_at: at('2026-11-30T12:00:01Z'), verdict: 'HUMAN_RESOLVED' },
        { issued_at: at('2026-11-30T12:00:29Z'), verdict: 'AGREED' },
        { issued_at: at('2026-11-30T11:59:59.999Z'), verdict: 'AGREED' },
        { issued_at: at('2026-11-30T12:00:02Z'), verdict: 'AGREED' },
      ],
      NOW,
      3,
    )
    assert.deepEqual(series, [
      { verdict: 'AGREED', counts: [0, 1, 2] },
      { verdict: 'HUMAN_RESOLVED', counts: [0, 0, 1] },
    ])
  })

  it('leaves out decisions before the window, in the future or with an unreadable time', () => {
    const { series } = decisionsPerMinute(
      [
        { issued_at: at('2026-11-30T11:57:59Z'), verdict: 'AGREED' },
        { issued_at: at('2026-11-30T12:01:00Z'), verdict: 'AGREED' },
        { issued_at: 'yesterday', verdict: 'AGREED' },
      ],
      NOW,
      3,
    )
    assert.deepEqual(series, [])
  })

  it('counts every decision inside the window exactly once', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            offsetMs: fc.integer({ min: -2 * 3_600_000, max: 120_000 }),
            verdict: fc.constantFrom('AGREED', 'CRITERIA_DIFFER', 'HUMAN_RESOLVED'),
          }),
        ),
        (items) => {
          const decisions = items.map((d) => ({
            issued_at: new Date(NOW + d.offsetMs).toISOString(),
            verdict: d.verdict,
          }))
          const { minutes, series } = decisionsPerMinute(decisions, NOW)
          const start = minutes[0]! * 1000
          const end = (minutes.at(-1)! + 60) * 1000
          const inside = decisions.filter(
            (d) => Date.parse(d.issued_at) >= start && Date.parse(d.issued_at) < end,
          )
          const counted = series.reduce((sum, s) => sum + s.counts.reduce((a, b) => a + b, 0), 0)
          assert.equal(counted, inside.length)
        },
      ),
    )
  })
})
