import { afterCommit, type Queryable } from '../db/pool.ts'
import { runStatement, type Statement } from '../db/statement.ts'
import type { JsonValue } from '../domain/shared/canonical-json.ts'
import type { AuditKind } from '../domain/vocabulary.ts'
import { signalAuditEntriesCommitted } from './sequencer/intake-signal.ts'
import { type IntakeExpressions, intakeInsert, intakeInsertFrom } from './store/intake.ts'

export type AuditData = { [key: string]: JsonValue }

/**
 * One change to record, as a caller writes it: absent ids may be left out and `at` defaults to now. The append
 * path fills it out (an `UnsequencedAuditRecord`); the sequencer adds seq, prev_hash and hash.
 */
export interface AuditEntry {
  kind: AuditKind
  /** The API key id that made the change, or "system". */
  actor: string
  outcome_id?: string | null
  manifest_id?: string | null
  subagent_id?: string | null
  orchestrator_id?: string | null
  verdict?: string | null
  data: AuditData
  /** The time of the change; defaults to now. */
  at?: string
}

/**
 * The one way anything is written to the audit log: stores `entries`, in order, inside the caller's transaction,
 * so a change and its records commit or roll back together. Takes no shared lock: the entries wait in the intake
 * until the sequencer gives them their seq, chain link and tree leaf (docs/log-format.md), and the local
 * sequencer is woken as soon as they are committed.
 */
export async function appendAuditRecords(tx: Queryable, entries: readonly AuditEntry[]): Promise<void> {
  if (entries.length === 0) return
  await runStatement(tx, auditAppend(entries))
  auditAppended(tx)
}

/**
 * The statement that stores `entries`, for a caller that sends it combined with the change it records (one round
 * trip); after running it, the caller calls `auditAppended` with the same client.
 */
export function auditAppend(entries: readonly AuditEntry[]): Statement {
  const now = new Date().toISOString()
  return intakeInsert(
    entries.map((entry) => ({
      at: entry.at ?? now,
      kind: entry.kind,
      actor: entry.actor,
      outcome_id: entry.outcome_id ?? null,
      manifest_id: entry.manifest_id ?? null,
      subagent_id: entry.subagent_id ?? null,
      orchestrator_id: entry.orchestrator_id ?? null,
      verdict: entry.verdict ?? null,
      data: entry.data,
    })),
  )
}

/**
 * The text that stores one entry per row of `source` (a CTE of the caller's statement), each field an SQL
 * expression (see `IntakeExpressions`): for a statement that writes a change and its record together, the record
 * made from what the change returned. Built once, as part of the statement's fixed text.
 */
export function auditAppendFrom(source: string, expressions: IntakeExpressions): string {
  return intakeInsertFrom(source, expressions)
}

/** Wakes the local sequencer once entries stored through `db` are committed (at once outside a transaction). */
export function auditAppended(db: Queryable): void {
  afterCommit(db, signalAuditEntriesCommitted)
}
