import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { compareInstants, parseInstant } from '../../../src/domain/shared/instant.ts'
import { byField, compareCodeUnits, sortedUnique } from '../../../src/domain/shared/order.ts'

describe('compareCodeUnits', () => {
  it('orders by UTF-16 code units, not by locale', () => {
    assert.deepEqual(['b', 'B', 'a', 'é', 'Z', '\u{1F600}', '\uFFFF'].sort(compareCodeUnits), [
      'B',
      'Z',
      'a',
      'b',
      'é',
      '\u{1F600}',
      '\uFFFF',
    ])
  })

  it("agrees with JavaScript's default sort", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary' })), (values) => {
        assert.deepEqual([...values].sort(compareCodeUnits), [...values].sort())
      }),
    )
  })

  it('sorts records by one field', () => {
    const rows = [{ id: 'orch-b' }, { id: 'orch-a' }]
    assert.deepEqual(rows.sort(byField('id')), [{ id: 'orch-a' }, { id: 'orch-b' }])
  })

  it('sortedUnique drops duplicates and sorts', () => {
    assert.deepEqual(sortedUnique(['b', 'a', 'b']), ['a', 'b'])
  })
})

describe('instants', () => {
  const cases: [string, string, number][] = [
    ['2026-01-01T00:00:00Z', '2026-01-01T00:00:00.000Z', 0],
    ['2026-01-01T01:00:00+01:00', '2026-01-01T00:00:00Z', 0],
    ['2026-01-01T00:00:00.0004Z', '2026-01-01T00:00:00.0003Z', 1],
    ['2026-01-01T00:00:00.000400Z', '2026-01-01T00:00:00.0004Z', 0],
    ['2026-01-01T00:00:00.001Z', '2026-01-01T00:00:00.0009Z', 1],
  ]
  for (const [a, b, sign] of cases) {
    it(`${a} vs ${b} → ${sign}`, () => {
      assert.equal(Math.sign(compareInstants(parseInstant(a), parseInstant(b))), sign)
    })
  }

  it('refuses text that is not a time', () => {
    assert.throws(() => parseInstant('yesterday'), RangeError)
  })
})
