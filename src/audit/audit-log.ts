import type { Queryable } from '../db/pool.ts'
import { type AuditRecord, hashAuditRecord } from '../domain/shared/audit-chain.ts'
import type { JsonValue } from '../domain/shared/canonical-json.ts'
import type { AuditKind } from '../domain/vocabulary.ts'
import { insertAuditRecords, lockAuditHead } from './repository.ts'

export type AuditData = { [key: string]: JsonValue }

/** One change to record; the log adds seq, prev_hash and hash. Absent ids are null in the record. */
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
 * The one way anything is written to the audit log: appends `entries`, in order, inside the caller's
 * transaction, so a change and its records commit or roll back together. Returns the records as written.
 *
 * Today the chain head row is locked until the transaction ends (that lock is what keeps seq gapless across
 * replicas), so callers append last, after the change's own writes, to hold it briefly. How records get their
 * place in the log is this module's business alone; see docs/audit-log.md.
 */
export async function appendAuditRecords(
  tx: Queryable,
  entries: readonly AuditEntry[],
): Promise<AuditRecord[]> {
  if (entries.length === 0) return []
  let head = await lockAuditHead(tx)
  const now = new Date().toISOString()
  const records = entries.map((entry) => {
    const unhashed = {
      seq: head.seq + 1,
      at: entry.at ?? now,
      kind: entry.kind,
      actor: entry.actor,
      outcome_id: entry.outcome_id ?? null,
      manifest_id: entry.manifest_id ?? null,
      subagent_id: entry.subagent_id ?? null,
      orchestrator_id: entry.orchestrator_id ?? null,
      verdict: entry.verdict ?? null,
      data: entry.data,
      prev_hash: head.hash,
    }
    const record: AuditRecord = { ...unhashed, hash: hashAuditRecord(unhashed) }
    head = { seq: record.seq, hash: record.hash }
    return record
  })
  await insertAuditRecords(tx, records)
  return records
}
