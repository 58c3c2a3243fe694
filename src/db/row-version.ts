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

/** The statements `rowUpdate` builds for one table and one set of columns. */
export interface RowUpdate {
  /** The UPDATE, `values` being the row's id and then the set's values in order. */
  update(values: unknown[]): Statement
  /** The same only while the row is at `version` (rowWithVersion): RETURNING id when it was. */
  updateIf(values: unknown[], version: string): Statement
}

/**
 * An UPDATE of one row by its id ($1) that sets `set` (its values $2, $3, …), prepared: as it is, and only while
 * the row is at the version a decision without a transaction read. `table` and `set` are the repository's own
 * constants, never data, so each text is built once.
 */
export function rowUpdate(table: string, set: string): RowUpdate {
  const text = `UPDATE ${table} SET ${set} WHERE id = $1`
  const setValues = Math.max(1, ...[...set.matchAll(/\$(\d+)/g)].map((match) => Number(match[1])))
  const ifText = `${text} AND xmin::text = $${setValues + 1} RETURNING id`
  return {
    update: (values) => ({ text, values, prepare: true }),
    updateIf: (values, version) => ({ text: ifText, values: [...values, version], prepare: true }),
  }
}
