import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { eachArrayRow, queryArrays } from '../../src/db/array-rows.ts'
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts'

describe('rows as arrays', () => {
  let database: TestDatabase
  let client: pg.Client
  before(async () => {
    database = await createTestDatabase({ migrate: false })
    client = new pg.Client({ connectionString: database.connectionString })
    await client.connect()
  })
  after(async () => {
    await client.end()
    await database.stop()
  })

  const series = 'SELECT n, repeat($2, n) FROM generate_series(1, $1::int) AS n ORDER BY n'

  it('hands each row on as it is read, in order, the same rows a query returns', async () => {
    const seen: unknown[][] = []
    await eachArrayRow<[number, string]>(client, series, [500, 'x'], (row) => seen.push(row))
    assert.equal(seen.length, 500)
    assert.deepEqual(seen, await queryArrays(client, series, [500, 'x']))
    assert.deepEqual(seen[2], [3, 'xxx'])
  })

  it('rejects with the first error the row handler throws, hands on no row after it, and leaves the client usable', async () => {
    let handled = 0
    await assert.rejects(
      eachArrayRow<[number, string]>(client, series, [100, 'y'], ([n]) => {
        handled++
        if (n >= 10) throw new RangeError(`row ${n}`)
      }),
      { name: 'RangeError', message: 'row 10' },
    )
    assert.equal(handled, 10)
    assert.deepEqual(await queryArrays(client, 'SELECT 1 + 1'), [[2]])
  })

  it('refuses a client with a query timeout, whose queries pg would answer through a callback of its own', async () => {
    const timed = new pg.Client({ connectionString: database.connectionString, query_timeout: 5_000 })
    await assert.rejects(
      eachArrayRow(timed, 'SELECT 1', [], () => {}),
      (err: Error) => err instanceof TypeError && /query_timeout/.test(err.message),
    )
  })

  it('rejects with the database error of a failing statement, and leaves the client usable', async () => {
    await assert.rejects(
      eachArrayRow(client, 'SELECT 1 / (n - 3) FROM generate_series(1, 5) AS n', [], () => {}),
      { code: '22012' },
    )
    assert.deepEqual(await queryArrays(client, 'SELECT 2 + 2'), [[4]])
  })
})
