import type { AuditRecord } from '../../domain/audit-chain.ts'
import type { Queryable } from '../pool.ts'

/**
 * audit_records columns, one per field of the SPEC's audit record:
 * seq (gapless, from audit_head), at, kind, actor (key id or "system"), outcome_id, manifest_id, subagent_id,
 * orchestrator_id, verdict, data (what the change was), prev_hash, hash.
 */
export const AUDIT_COLUMNS =
  'seq, at, kind, actor, outcome_id, manifest_id, subagent_id, orchestrator_id, verdict, data, prev_hash, hash'

export interface AuditRow {
  seq: number
  at: Date
  kind: string
  actor: string
  outcome_id: string | null
  manifest_id: string | null
  subagent_id: string | null
  orchestrator_id: string | null
  verdict: string | null
  data: AuditRecord['data']
  prev_hash: string
  hash: string
}

export function auditRowToRecord(row: AuditRow): AuditRecord {
  return { ...row, at: row.at.toISOString(), kind: row.kind as AuditRecord['kind'] }
}

/** Locks the chain head; held until the surrounding transaction ends. */
export async function lockAuditHead(db: Queryable): Promise<{ seq: number; hash: string }> {
  const { rows } = await db.query<{ seq: number; hash: string }>(
    'SELECT seq, hash FROM audit_head FOR UPDATE',
  )
  return rows[0]!
}

export async function insertAuditRecords(db: Queryable, records: AuditRecord[]): Promise<void> {
  if (records.length === 0) return
  await db.query(
    `INSERT INTO audit_records (${AUDIT_COLUMNS})
     SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::uuid[], $6::uuid[],
                          $7::text[], $8::text[], $9::text[], $10::jsonb[], $11::text[], $12::text[])`,
    [
      records.map((r) => r.seq),
      records.map((r) => r.at),
      records.map((r) => r.kind),
      records.map((r) => r.actor),
      records.map((r) => r.outcome_id),
      records.map((r) => r.manifest_id),
      records.map((r) => r.subagent_id),
      records.map((r) => r.orchestrator_id),
      records.map((r) => r.verdict),
      records.map((r) => JSON.stringify(r.data)),
      records.map((r) => r.prev_hash),
      records.map((r) => r.hash),
    ],
  )
  const last = records[records.length - 1]!
  await db.query('UPDATE audit_head SET seq = $1, hash = $2', [last.seq, last.hash])
}
