import { named, type Statement, statement } from '../../db/statement.ts'
import type { UnsequencedAuditRecord } from '../core/records.ts'

/**
 * audit_intake: committed audit entries the sequencer has not placed in the log yet. id (bigserial: orders the
 * sequencer's reads and marks "committed before" for read-your-writes), then the entry's own fields.
 */
export interface IntakeRow extends Omit<UnsequencedAuditRecord, 'at'> {
  id: number
  at: Date
}

/** The intake's entry columns, in the order every INSERT names them, each with its type. */
const INTAKE_COLUMNS = {
  at: 'timestamptz',
  kind: 'text',
  actor: 'text',
  outcome_id: 'uuid',
  manifest_id: 'uuid',
  subagent_id: 'text',
  orchestrator_id: 'text',
  verdict: 'text',
  data: 'jsonb',
} as const satisfies Record<keyof UnsequencedAuditRecord, string>

type IntakeColumn = keyof typeof INTAKE_COLUMNS
const COLUMN_NAMES = Object.keys(INTAKE_COLUMNS) as IntakeColumn[]

/** The INSERT of `entries` into the intake (one statement for any number; takes no lock another writer waits
 * on), to run alone or combined with the change it records. The entries go as one JSON array, in order: one
 * parameter the driver sends as it is, where arrays of each field had to be escaped element by element. */
export function intakeInsert(entries: readonly UnsequencedAuditRecord[]): Statement {
  return named(INTAKE_INSERT, [JSON.stringify(entries)])
}

const RECORDSET_COLUMNS = COLUMN_NAMES.map((column) => `${column} ${INTAKE_COLUMNS[column]}`).join(', ')
const INTAKE_INSERT = `INSERT INTO audit_intake (${COLUMN_NAMES.join(', ')})
     SELECT ${COLUMN_NAMES.map((column) => `e.${column}`).join(', ')}
     FROM json_to_recordset($1::json) AS e(${RECORDSET_COLUMNS})`

/**
 * An intake entry's fields as SQL expressions over the rows it is made from: the statement's own parameters
 * (`$n`, as they are numbered there) or the rows' columns. An id left out is null.
 */
export type IntakeExpressions = Record<'at' | 'kind' | 'actor' | 'data', string> &
  Partial<Record<IntakeColumn, string>>

/**
 * The text of an INSERT of one intake entry per row of `source` (a CTE, or any FROM item, of the statement it
 * goes into): for a statement that writes a change and its audit entry in one round trip, the entry made from
 * what the change returned. The same columns and order as `intakeInsert`. Build it once, where the statement's
 * text is: it is a fixed part of that text.
 */
export function intakeInsertFrom(source: string, expressions: IntakeExpressions): string {
  const columns = COLUMN_NAMES.filter((column) => expressions[column] !== undefined)
  return `INSERT INTO audit_intake (${columns.join(', ')})
       SELECT ${columns.map((column) => expressions[column]).join(', ')}
       FROM ${source}`
}

/**
 * Read-your-writes, first look: the intake mark now and whether anything at or below it still waits for the
 * sequencer, or the tree still lacks records of the chain. One round trip; most reads stop here. The mark is the
 * highest intake id handed out so far, committed or not (0 before the first): every entry committed before this
 * read has an id at or below it, so once no entry at or below it is left in the intake, all of them are in the
 * log. It is read from the sequence itself, because drained entries are gone from the table.
 */
export function sequencingState(): Statement<{ mark: number; pending: boolean }> {
  return statement(SEQUENCING_STATE)
}

const SEQUENCING_STATE = `SELECT m.mark,
       (h.tree_size < h.seq OR EXISTS (SELECT 1 FROM audit_intake WHERE id <= m.mark)) AS pending
     FROM (SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS mark FROM audit_intake_id_seq) m, audit_head h`

/** A read that ran in one statement with the sequencing state (see `sequencedQuery`). */
export interface SequencedRows<R> {
  rows: R[]
  mark: number
  pending: boolean
}

/** A row of `sequencedQuery`: the query's columns, and the sequencing state's. */
export type SequencedRow<R> = R & { log_mark: number; log_pending: boolean; log_found: boolean | null }

/**
 * `query` and the log's sequencing state (`sequencingState`) in one statement, so in one snapshot: when nothing
 * committed before it still waits for the sequencer (`pending` false), its rows (`sequencedRows`) are everything
 * a read-your-writes reader may see, in one round trip. When `pending`, the caller waits for `mark` to be
 * sequenced and runs `query` again. `orderBy` names the column the rows are in order of (the join does not keep
 * the query's own order); the query's columns may not be named `log_mark`, `log_pending` or `log_found`.
 */
export function sequencedQuery<R extends object>(
  query: { text: string; values?: unknown[] },
  orderBy: string,
): Statement<SequencedRow<R>> {
  return statement(
    `WITH state AS (${SEQUENCING_STATE}), found AS (SELECT true AS log_found, q.* FROM (${query.text}) q)
     SELECT state.mark AS log_mark, state.pending AS log_pending, found.* FROM state LEFT JOIN found ON true
     ORDER BY found.${orderBy}`,
    query.values ?? [],
  )
}

/** The rows of `sequencedQuery` as the query's rows and the sequencing state. */
export function sequencedRows<R extends object>(rows: readonly SequencedRow<R>[]): SequencedRows<R> {
  const state = rows[0]!
  return {
    // With no match, the one row is the state's alone (log_found null).
    rows: rows
      .filter((row) => row.log_found)
      .map(({ log_mark: _m, log_pending: _p, log_found: _f, ...row }) => row as unknown as R),
    mark: state.log_mark,
    pending: state.log_pending,
  }
}

/** Whether entries at or below `mark` still wait for the sequencer (or the tree lags the chain). */
export function sequencingPendingUpTo(mark: number): Statement<{ pending: boolean }> {
  return statement(
    `SELECT (h.tree_size < h.seq OR EXISTS (SELECT 1 FROM audit_intake WHERE id <= $1)) AS pending
     FROM audit_head h`,
    [mark],
  )
}

/** The sequencer's idle check: is there anything to do (entries waiting, or records not yet in the tree)? */
export function sequencerWork(): Statement<{ work: boolean }> {
  return statement(
    'SELECT (h.tree_size < h.seq OR EXISTS (SELECT 1 FROM audit_intake)) AS work FROM audit_head h',
  )
}
