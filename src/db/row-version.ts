import type { QueryResultRow } from 'pg'
import type { Queryable } from './pool.ts'
import { named, queryFirst } from './statement.ts'

/**
 * The row of `table` with this id, and its row version (xmin: every write to the row gives it a new one), without
 * locking it: what a case's decision without a transaction reads (CaseKind.optimistic), to write only while the
 * row is still at that version. `table` and `columns` are the repository's own constants, never data.
 */
export async function findWithRowVersion<Row extends QueryResultRow>(
  db: Queryable,
  table: string,
  columns: string,
  id: string,
): Promise<{ case: Row; version: string } | undefined> {
  const found = await queryFirst(
    db,
    named<Row & { row_version: string }>(
      `SELECT ${columns}, xmin::text AS row_version FROM ${table} WHERE id = $1`,
      [id],
    ),
  )
  if (found === undefined) return undefined
  const { row_version, ...row } = found
  return { case: row as unknown as Row, version: row_version }
}
