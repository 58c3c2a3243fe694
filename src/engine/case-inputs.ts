import { type AuditEntry, auditAppend, auditAppended } from '../audit-log/append.ts'
import { PG, pgErrorCode } from '../db/pg-errors.ts'
import { type Pool, type Queryable, type Transaction, withTransaction } from '../db/pool.ts'
import { combineWrites, runStatement, type Statement } from '../db/statement.ts'

/*
 * Taking a case's inputs (an interpretation, a subtask's result, a judge's verdict, …), written once for every
 * kind. An input changes what the case's decision reads, and a decision may be made without the case's lock
 * (evaluate-case.ts: it reads the row with its version and writes only while the row is still at that version),
 * so every write of an input also writes the case row — a new row version — in the same statement: the
 * decision that read the inputs before then finds its row moved and decides again in a transaction.
 */

/** An input's write: its rows, the write of its case row that gives that row a new version, its audit records. */
export interface InputWrite {
  /** The input's own rows (INSERT, UPDATE; none reading what another part writes). */
  writes: readonly Statement[]
  /**
   * An UPDATE of the case row (its totals, or only `SET id = id`): the new row version; or the name of the trigger
   * on the input's table that writes the case row (a kind whose rows older replicas may still write).
   */
  touch: Statement | { trigger: string }
  audit: readonly AuditEntry[]
}

/** Writes an input, its case row's new version and its records as one statement, in `tx` (a transaction). */
export async function writeInput(tx: Queryable, input: InputWrite): Promise<void> {
  const touch = 'trigger' in input.touch ? [] : [input.touch]
  await runStatement(tx, combineWrites([...input.writes, ...touch, auditAppend(input.audit)]))
  auditAppended(tx)
}

/**
 * What taking an input answers: the input as stored, new (`created`) or the same one already there (`unchanged`);
 * or, for an input that arrived after the case's final manifest, that manifest, which stands (the input itself is
 * on record as refused, or as dissent, and changes nothing).
 */
export type InputTaken<Answer> =
  | { kind: 'created'; answer: Answer }
  | { kind: 'unchanged'; answer: Answer }
  | { kind: 'late'; manifestId: string }

/** How an input is taken: in one statement where it can be, else in a transaction. */
export interface InputSteps<T> {
  /**
   * The input in one statement, the common case (a case's first input of its kind): a statement that locks the
   * case row, writes the input, touches the row and appends the records, or writes nothing when the input needs
   * judging (answer undefined). A unique violation — a concurrent first input of the same key won — also leaves
   * it to the transaction. Absent when this input can only take the transaction.
   */
  first?: ((db: Queryable) => Promise<T | undefined>) | undefined
  /** Whether `first`'s answer wrote (default: every answer did); a replay answered from its read wrote nothing. */
  wrote?: (answer: T) => boolean
  /** The transaction: locks the case, judges the input (revision, resend, refusal, 403, 404, 409, 422, limits). */
  locked: (tx: Transaction) => Promise<T>
}

/** Takes an input: `first` when it writes it, else `locked`. */
export async function submitInput<T>(db: Pool, steps: InputSteps<T>): Promise<T> {
  if (steps.first) {
    let written: T | undefined
    try {
      written = await steps.first(db)
    } catch (err) {
      if (pgErrorCode(err) !== PG.UNIQUE_VIOLATION) throw err
    }
    if (written !== undefined) {
      if (steps.wrote?.(written) ?? true) auditAppended(db)
      return written
    }
  }
  return withTransaction(db, steps.locked)
}
