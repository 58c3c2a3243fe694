import type { QueryResultRow } from 'pg'
import { named, type Statement } from './statement.ts'

/** A row read with its row version (xmin: every write to the row gives it a new one). */
export type VersionedRow<Row extends QueryResultRow> = Row & { row_version: string }

/**
 * The row of `table` with this id, and its row version, without locking it: what a case's decision without a
 * transaction reads (CaseKind.optimistic), to write only while the row is still at that version. `table` and
 * `columns` are the repository's own constants, never data. Split the row with `splitRowVersion`.
 */
export function rowWithVersion<Row extends QueryResultRow>(
  table: string,
  columns: string,
  id: string,
): Statement<VersionedRow<Row>> {
  return named(`SELECT ${columns}, xmin::text AS row_version FROM ${table} WHERE id = $1`, [id])
}

/** A row read by `rowWithVersion` as the case and its version (undefined when there was no row). */
export function splitRowVersion<Row extends QueryResultRow>(
  found: VersionedRow<Row> | undefined,
): { case: Row; version: string } | undefined {
  if (found === undefined) return undefined
  const { row_version, ...row } = found
  return { case: row as unknown as Row, version: row_version }
}
