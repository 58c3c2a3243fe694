import type pg from 'pg'
import type { Queryable } from './pool.ts'

/**
 * Runs a query whose rows come back as arrays (pg's `rowMode: 'array'`): no object per row, which is what bulk
 * reads of millions of rows (the log verifier) spend their time on otherwise. Every Queryable is a pg pool or
 * client, which take a query config.
 */
export async function queryArrays<Row extends unknown[]>(
  db: Queryable,
  text: string,
  values: unknown[] = [],
): Promise<Row[]> {
  const result = await (db as unknown as pg.ClientBase).query({ text, values, rowMode: 'array' })
  return result.rows as Row[]
}
