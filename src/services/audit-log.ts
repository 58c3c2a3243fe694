import type { Queryable } from '../db/pool.ts'
import { insertAuditRecords, lockAuditHead } from '../db/repositories/audit-records.ts'
import { type AuditKind, type AuditRecord, hashAuditRecord } from '../domain/audit-chain.ts'
import type { JsonValue } from '../domain/canonical-json.ts'

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
 * Appends records to the hash chain inside the caller's transaction, so a change and its record commit or
 * roll back together. Opening a batch locks the chain head until that transaction ends: open it last, after
 * the change's own writes, to keep the lock short.
 */
export class AuditBatch {
  private readonly records: AuditRecord[] = []
  private constructor(
    private readonly db: Queryable,
    private head: { seq: number; hash: string },
  ) {}

  /** `db` must be a client inside a transaction: outside one, the head lock would end with the statement. */
  static async open(db: Queryable): Promise<AuditBatch> {
    return new AuditBatch(db, await lockAuditHead(db))
  }

  /** The seq the next appended record will get (a manifest names its own `audit_seq` before it is signed). */
  get nextSeq(): number {
    return this.head.seq + 1
  }

  append(entry: AuditEntry): AuditRecord {
    const unhashed = {
      seq: this.nextSeq,
      at: entry.at ?? new Date().toISOString(),
      kind: entry.kind,
      actor: entry.actor,
      outcome_id: entry.outcome_id ?? null,
      manifest_id: entry.manifest_id ?? null,
      subagent_id: entry.subagent_id ?? null,
      orchestrator_id: entry.orchestrator_id ?? null,
      verdict: entry.verdict ?? null,
      data: entry.data,
      prev_hash: this.head.hash,
    }
    const record: AuditRecord = { ...unhashed, hash: hashAuditRecord(unhashed) }
    this.records.push(record)
    this.head = { seq: record.seq, hash: record.hash }
    return record
  }

  /** Writes the appended records and moves the head; call once, before the transaction commits. */
  async write(): Promise<AuditRecord[]> {
    await insertAuditRecords(this.db, this.records)
    return this.records
  }
}

/** Convenience for the common case of one change, one record. */
export async function appendAuditRecord(db: Queryable, entry: AuditEntry): Promise<AuditRecord> {
  const batch = await AuditBatch.open(db)
  const record = batch.append(entry)
  await batch.write()
  return record
}
