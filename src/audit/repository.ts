import type { Queryable } from '../db/pool.ts'
import type { AuditRecord } from '../domain/shared/audit-chain.ts'

/**
 * audit_records columns, one per field of an audit record (docs/audit-log.md):
 * seq (gapless, from audit_head), at, kind, actor (key id or "system"), outcome_id, manifest_id, subagent_id,
 * orchestrator_id, verdict, data (what the change was), prev_hash, hash.
 */
export const AUDIT_COLUMNS =
  'seq, at, kind, actor, outcome_id, manifest_id, subagent_id, orchestrator_id, verdict, data, prev_hash, hash'

export type AuditRow = Omit<AuditRecord, 'at' | 'kind'> & { at: Date; kind: string }

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

/** Inserts the records and moves the chain head in one statement (one round trip while the head is locked). */
export async function insertAuditRecords(db: Queryable, records: AuditRecord[]): Promise<void> {
  const last = records[records.length - 1]
  if (!last) return
  await db.query(
    `WITH inserted AS (
       INSERT INTO audit_records (${AUDIT_COLUMNS})
       SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::uuid[], $6::uuid[],
                            $7::text[], $8::text[], $9::text[], $10::jsonb[], $11::text[], $12::text[])
     )
     UPDATE audit_head SET seq = $13, hash = $14`,
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
      last.seq,
      last.hash,
    ],
  )
}

export interface AuditFilter {
  outcomeId?: string | undefined
  /** Records about one fan-out: they carry its id as `data.fanout_id`. */
  fanoutId?: string | undefined
  subagentId?: string | undefined
  orchestratorId?: string | undefined
  kind?: string | undefined
  verdict?: string | undefined
  from?: Date | undefined
  to?: Date | undefined
  afterSeq: number | null
}

/** Ascending seq, keyset-paged: pages stay stable while appends continue (new records only ever come after). */
export async function listAuditRecords(
  db: Queryable,
  filter: AuditFilter,
  limit: number,
): Promise<AuditRow[]> {
  const { rows } = await db.query<AuditRow>(
    `SELECT ${AUDIT_COLUMNS} FROM audit_records
     WHERE ($1::uuid IS NULL OR outcome_id = $1) AND ($2::text IS NULL OR subagent_id = $2)
       AND ($3::text IS NULL OR orchestrator_id = $3) AND ($4::text IS NULL OR kind = $4)
       AND ($5::text IS NULL OR verdict = $5) AND ($6::timestamptz IS NULL OR at >= $6)
       AND ($7::timestamptz IS NULL OR at <= $7) AND ($8::bigint IS NULL OR seq > $8)
       AND ($10::text IS NULL OR data->>'fanout_id' = $10)
     ORDER BY seq LIMIT $9`,
    [
      filter.outcomeId ?? null,
      filter.subagentId ?? null,
      filter.orchestratorId ?? null,
      filter.kind ?? null,
      filter.verdict ?? null,
      filter.from ?? null,
      filter.to ?? null,
      filter.afterSeq,
      limit,
      filter.fanoutId ?? null,
    ],
  )
  return rows
}

/** Records with from <= seq <= to, ascending, at most `limit` (the verifier reads the chain in such slices). */
export async function auditRange(
  db: Queryable,
  fromSeq: number,
  toSeq: number,
  limit: number,
): Promise<AuditRow[]> {
  const { rows } = await db.query<AuditRow>(
    `SELECT ${AUDIT_COLUMNS} FROM audit_records WHERE seq >= $1 AND seq <= $2 ORDER BY seq LIMIT $3`,
    [fromSeq, toSeq, limit],
  )
  return rows
}

export async function readAuditHead(db: Queryable): Promise<{ seq: number; hash: string }> {
  const { rows } = await db.query<{ seq: number; hash: string }>('SELECT seq, hash FROM audit_head')
  return rows[0]!
}
