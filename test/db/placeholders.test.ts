import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { shiftPlaceholders } from '../../src/db/placeholders.ts'
import { createPool, type Pool } from '../../src/db/pool.ts'
import { combineWrites, queryOne, type Statement, statement } from '../../src/db/statement.ts'
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts'

describe('shiftPlaceholders', () => {
  it('moves every placeholder up by the offset', () => {
    assert.equal(shiftPlaceholders('SELECT $1, $2::int, f($10)', 3), 'SELECT $4, $5::int, f($13)')
    assert.equal(shiftPlaceholders('x=$1 AND y<>$2', 1), 'x=$2 AND y<>$3')
    assert.equal(shiftPlaceholders('SELECT $1', 0), 'SELECT $1')
  })

  it('leaves a $1 inside a string constant as it is', () => {
    assert.equal(
      shiftPlaceholders(`SELECT $1, 'costs $1', 'it''s $2' || $2`, 2),
      `SELECT $3, 'costs $1', 'it''s $2' || $4`,
    )
    assert.equal(shiftPlaceholders(`SELECT E'a\\' $1', $1`, 1), `SELECT E'a\\' $1', $2`)
    // Outside an E string a backslash is an ordinary character: the quote after it ends the string.
    assert.equal(shiftPlaceholders(`SELECT 'a\\', $1`, 1), `SELECT 'a\\', $2`)
  })

  it('leaves dollar-quoted strings, quoted identifiers, comments and identifiers as they are', () => {
    assert.equal(
      shiftPlaceholders('SELECT $$ $1 $$, $tag$ $1 $$ $tag$, $1', 4),
      'SELECT $$ $1 $$, $tag$ $1 $$ $tag$, $5',
    )
    assert.equal(shiftPlaceholders('SELECT "col $1", "a""$1", $1', 1), 'SELECT "col $1", "a""$1", $2')
    assert.equal(shiftPlaceholders('SELECT $1 -- not $1\n, $2', 1), 'SELECT $2 -- not $1\n, $3')
    assert.equal(
      shiftPlaceholders('SELECT /* $1 /* nested $1 */ still $1 */ $1', 1),
      'SELECT /* $1 /* nested $1 */ still $1 */ $2',
    )
    assert.equal(shiftPlaceholders('SELECT a$1, $1', 1), 'SELECT a$1, $2')
  })
})

describe('combined statements with literals that look like placeholders', () => {
  let database: TestDatabase
  let pool: Pool

  before(async () => {
    database = await createTestDatabase({ migrate: false })
    pool = createPool({ connectionString: database.connectionString, max: 1 })
  })
  after(async () => {
    await pool.end()
    await database.stop()
  })

  it('sends each literal to the database unchanged and each value to its own placeholder', async () => {
    await pool.query('CREATE TEMP TABLE t (a text, b text)')
    const first: Statement = statement(`INSERT INTO t VALUES ($1, 'first $1 -- $2')`, ['one'])
    const second: Statement = statement(`INSERT INTO t VALUES ($1 || $$ $1 $$, $2 /* $1 */)`, [
      'two',
      'three',
    ])
    const last = statement<{ n: number }>(`SELECT count(*)::int AS n FROM t WHERE a <> $1`, ['$1'])
    await pool.query('BEGIN')
    try {
      // The CTE writes are not seen by the final SELECT of the same statement: count afterwards.
      await queryOne(pool, combineWrites([first, second, last]))
      const { rows } = await pool.query<{ a: string; b: string }>('SELECT a, b FROM t ORDER BY a')
      assert.deepEqual(rows, [
        { a: 'one', b: 'first $1 -- $2' },
        { a: 'two $1 ', b: 'three' },
      ])
    } finally {
      await pool.query('ROLLBACK')
    }
  })
})
