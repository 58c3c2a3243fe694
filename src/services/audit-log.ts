import { afterCommit, type Queryable } from '../db/pool.ts'
import { insertIntakeEntries } from '../db/repositories/audit-intake.ts'
import type { AuditKind } from '../domain/audit-chain.ts'
import type { JsonValue } from '../domain/canonical-json.ts'
import { signalAuditEntriesCommitted } from '../log/intake-signal.ts'

export interface AuditEntry {
  kind: AuditKind
  actor: string
  outcome_id?: string | null
  manifest_id?: string | null
  subagent_id?: string | null
  orchestrator_id?: string | null
  verdict?: string | null
  data: { [key: string]: JsonValue }
  /** Defaults to the time the entry is appended. */
  at?: string
}

/**
 * Writes audit entries inside the caller's transaction, so a change and its records commit or roll back
 * together. Takes no shared lock: the entries wait in the intake until the sequencer gives them their seq, chain
 * link and tree leaf (docs/log-format.md), and the sequencer is woken as soon as they are committed.
 */
export async function appendAuditRecords(db: Queryable, entries: readonly AuditEntry[]): Promise<void> {
  if (entries.length === 0) return
  const at = new Date().toISOString()
  await insertIntakeEntries(
    db,
    entries.map((entry) => ({
      at: entry.at ?? at,
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
  afterCommit(db, signalAuditEntriesCommitted)
}

/** Convenience for the common case of one change, one record. */
export async function appendAuditRecord(db: Queryable, entry: AuditEntry): Promise<void> {
  await appendAuditRecords(db, [entry])
}
