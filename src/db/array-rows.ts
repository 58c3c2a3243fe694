import pg from 'pg'
import type { Queryable } from './pool.ts'

/**
 * Runs a query whose rows come back as arrays (pg's `rowMode: 'array'`): no object per row, which is what bulk
 * reads of millions of rows (the log verifier) spend their time on otherwise.
 */
export async function queryArrays<Row extends unknown[]>(
  db: Queryable,
  text: string,
  values: unknown[] = [],
): Promise<Row[]> {
  const result = await db.query<Row>({ text, values, rowMode: 'array' })
  return result.rows
}

/**
 * Runs a query on one client and hands each row, as an array, to `onRow` as it is parsed; no row is kept. A pool
 * cannot run such a query (it needs the client for the whole stream), nor a client with pg's `query_timeout` (pg
 * then gives the query a callback of its own, which keeps every row and takes its errors): use one without, and
 * the server's `statement_timeout` if a bound is needed. Resolves at the end of the rows, rejects on a database
 * error or the first error `onRow` throws (the rows after it are read but not handed on).
 */
export function eachArrayRow<Row extends unknown[]>(
  client: pg.ClientBase,
  text: string,
  values: unknown[],
  onRow: (row: Row) => void,
): Promise<void> {
  const parameters = (client as { connectionParameters?: { query_timeout?: number } }).connectionParameters
  if (parameters?.query_timeout) {
    return Promise.reject(new TypeError('eachArrayRow needs a client without query_timeout'))
  }
  return new Promise((resolve, reject) => {
    let failure: { error: unknown } | null = null
    const arrayRows: pg.QueryArrayConfig = { text, values, rowMode: 'array' }
    const query = new pg.Query<Row>(arrayRows)
    query.on('row', (row: Row) => {
      if (failure) return
      try {
        onRow(row)
      } catch (error) {
        failure = { error }
      }
    })
    query.on('error', reject)
    query.on('end', () => (failure ? reject(failure.error) : resolve()))
    client.query(query)
  })
}
