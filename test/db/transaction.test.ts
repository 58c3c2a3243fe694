import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { afterCommit, createPool, type Pool, Transaction, withTransaction } from '../../src/db/pool.ts'
import { named, queryFirst, queryRows, runStatement, statement } from '../../src/db/statement.ts'
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts'

describe('transactions and their after-commit hooks', () => {
  let database: TestDatabase
  let pool: Pool

  before(async () => {
    database = await createTestDatabase({ migrate: false })
    pool = createPool({ connectionString: database.connectionString, max: 2 })
    await pool.query('CREATE TABLE marks (id int PRIMARY KEY)')
  })
  after(async () => {
    await pool.end()
    await database.stop()
  })

  const marked = async (id: number) =>
    (await queryFirst(pool, statement('SELECT id FROM marks WHERE id = $1', [id]))) !== undefined

  it('runs a hook after the commit, when what the transaction wrote is visible to others', async () => {
    const seen: boolean[] = []
    let inside = false
    await withTransaction(pool, async (tx) => {
      assert.ok(tx instanceof Transaction)
      await runStatement(tx, statement('INSERT INTO marks VALUES ($1)', [1]))
      afterCommit(tx, () => {
        inside = true
      })
      tx.afterCommit(() => {
        seen.push(true)
      })
      assert.equal(inside, false, 'not before the commit')
    })
    assert.equal(inside, true)
    assert.deepEqual(seen, [true])
    assert.equal(await marked(1), true)
  })

  it('never runs a hook when the transaction rolls back', async () => {
    let ran = false
    await assert.rejects(
      withTransaction(pool, async (tx) => {
        await runStatement(tx, statement('INSERT INTO marks VALUES ($1)', [2]))
        afterCommit(tx, () => {
          ran = true
        })
        throw new Error('changed my mind')
      }),
      /changed my mind/,
    )
    assert.equal(ran, false)
    assert.equal(await marked(2), false)
    // Nor when the COMMIT itself fails (a deferred constraint, a lost connection): nothing was committed.
    await pool.query('CREATE TABLE once (id int PRIMARY KEY DEFERRABLE INITIALLY DEFERRED)')
    await pool.query('INSERT INTO once VALUES (1)')
    await assert.rejects(
      withTransaction(pool, async (tx) => {
        await runStatement(tx, statement('INSERT INTO once VALUES (1)'))
        afterCommit(tx, () => {
          ran = true
        })
      }),
      { code: '23505' },
    )
    assert.equal(ran, false)
  })

  it('runs a hook at once outside a transaction', async () => {
    let ran = false
    afterCommit(pool, () => {
      ran = true
    })
    assert.equal(ran, true)
  })

  it('runs a statement the same on the pool and inside a transaction, prepared or not', async () => {
    const prepared = createPool({
      connectionString: database.connectionString,
      max: 1,
      namedStatements: true,
    })
    try {
      const read = named<{ n: number }>('SELECT count(*)::int AS n FROM marks WHERE id >= $1', [0])
      const preparedOnConnection = (tx: Transaction) =>
        queryFirst(tx, statement<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements'))
      for (const [db, prepares] of [
        [pool, 0],
        [prepared, 1],
      ] as const) {
        assert.deepEqual(await queryRows(db, read), [{ n: 1 }])
        await withTransaction(db, async (tx) => {
          assert.deepEqual(await queryRows(tx, read), [{ n: 1 }])
          assert.deepEqual(await preparedOnConnection(tx), { n: prepares })
        })
      }
      // int8 columns are read as numbers on every connection this service opens.
      assert.deepEqual((await pool.query('SELECT 7::bigint AS n')).rows, [{ n: 7 }])
    } finally {
      await prepared.end()
    }
  })
})
