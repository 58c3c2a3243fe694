import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { combineWrites, guardedWrites, keptCombinedTexts, type Statement } from '../../src/db/statement.ts'

const insertA: Statement = { text: 'INSERT INTO a (x, y) SELECT $1, $2', values: [1, 2], prepare: true }
const insertB: Statement = { text: 'INSERT INTO b (z) SELECT $1', values: [3], prepare: true }
const updateC: Statement = { text: 'UPDATE c SET v = $2 WHERE id = $1', values: ['id', 'v'], prepare: true }

describe('combined statements', () => {
  it('combine writes into one WITH statement, placeholders moved past the values before them', () => {
    const combined = combineWrites([insertA, insertB, updateC])
    assert.equal(
      combined.text,
      'WITH w1 AS (INSERT INTO a (x, y) SELECT $1, $2),\nw2 AS (INSERT INTO b (z) SELECT $3)\nUPDATE c SET v = $5 WHERE id = $4',
    )
    assert.deepEqual(combined.values, [1, 2, 3, 'id', 'v'])
    assert.equal(combined.prepare, true)
    assert.equal(combineWrites([insertB]), insertB)
  })

  it('guard writes with the rows of a first statement', () => {
    const guarded = guardedWrites(updateC, [insertA, insertB])
    assert.equal(
      guarded.text,
      'WITH guard AS (UPDATE c SET v = $2 WHERE id = $1),\n' +
        'w1 AS (INSERT INTO a (x, y) SELECT $3, $4 WHERE EXISTS (SELECT 1 FROM guard)),\n' +
        'w2 AS (INSERT INTO b (z) SELECT $5 WHERE EXISTS (SELECT 1 FROM guard))\nSELECT * FROM guard',
    )
    assert.deepEqual(guarded.values, ['id', 'v', 1, 2, 3])
    assert.equal(guarded.prepare, true)
  })

  it('build the text of prepared parts once, and anything built from data afresh each time', () => {
    const kept = keptCombinedTexts()
    const first = combineWrites([insertA, insertB])
    assert.equal(keptCombinedTexts(), kept + 1)
    // The same parts with other values: the same text, built before.
    const again = combineWrites([
      { ...insertA, values: [7, 8] },
      { ...insertB, values: [9] },
    ])
    assert.equal(again.text, first.text)
    assert.deepEqual(again.values, [7, 8, 9])
    assert.equal(keptCombinedTexts(), kept + 1)
    // Other parts, or the same parts in another order, with another number of values, or under a guard, are
    // other statements.
    assert.notEqual(combineWrites([insertB, insertA]).text, first.text)
    assert.match(combineWrites([{ ...insertA, values: [1, 2, 3] }, insertB]).text, /SELECT \$4\)?$/m)
    assert.equal(guardedWrites(insertA, [insertB]).text.startsWith('WITH guard AS (INSERT INTO a'), true)
    assert.equal(keptCombinedTexts(), kept + 4)
    // A part built from data is not prepared: the result is neither prepared nor kept.
    const adHoc = (table: string): Statement => ({ text: `INSERT INTO ${table} SELECT $1`, values: [0] })
    const one = combineWrites([insertA, adHoc('t1')])
    const two = combineWrites([insertA, adHoc('t2')])
    assert.equal(one.prepare, false)
    assert.match(one.text, /INSERT INTO t1 SELECT \$3/)
    assert.match(two.text, /INSERT INTO t2 SELECT \$3/)
    assert.equal(keptCombinedTexts(), kept + 4)
  })
})
