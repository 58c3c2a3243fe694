import { queryArrays } from '../db/array-rows.ts'
import type { Queryable } from '../db/pool.ts'
import type { AuditRecord } from '../domain/shared/audit-chain.ts'
import { type CheckedRecord, checkedRecord, storedRecord } from '../log/log-checker.ts'

/**
 * audit_records columns, one per field of an audit record (docs/log-format.md):
 * seq (gapless, given by the sequencer), at, kind, actor (key id or "system"), outcome_id, manifest_id, subagent_id,
 * orchestrator_id, verdict, data (what the change was), prev_hash, hash.
 */
export const AUDIT_COLUMNS =
  'seq, at, kind, actor, outcome_id, manifest_id, subagent_id, orchestrator_id, verdict, data, prev_hash, hash'

export type AuditRow = Omit<AuditRecord, 'at' | 'kind'> & { at: Date; kind: string }

export function auditRowToRecord(row: AuditRow): AuditRecord {
  return { ...row, at: row.at.toISOString(), kind: row.kind as AuditRecord['kind'] }
}

/**
 * audit_head: where the log ends. seq and hash of the last record; tree_size, how many records are leaves of the
 * Merkle tree (equal to seq except while records written before the tree existed are being added).
 */
export interface AuditHeadRow {
  seq: number
  hash: string
  tree_size: number
}

/** Locks the head until the surrounding transaction ends: what makes one batch at a time extend the log. */
export async function lockAuditHead(db: Queryable): Promise<AuditHeadRow> {
  const { rows } = await db.query<AuditHeadRow>('SELECT seq, hash, tree_size FROM audit_head FOR UPDATE')
  return rows[0]!
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
  /** Records about one review: they carry its id as `data.review_id`. */
  reviewId?: string | undefined
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
       AND ($10::text IS NULL OR data->>'review_id' = $10)
       AND ($11::text IS NULL OR data->>'fanout_id' = $11)
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
      filter.reviewId ?? null,
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

export async function readAuditHead(db: Queryable): Promise<AuditHeadRow> {
  const { rows } = await db.query<AuditHeadRow>('SELECT seq, hash, tree_size FROM audit_head')
  return rows[0]!
}

/**
 * Records with from <= seq <= to, ascending, for bulk checking: rows as arrays and `at` formatted by the
 * database exactly as the API writes it (millisecond RFC 3339 UTC), so a million rows cost no Date objects.
 * With `storedText`, a record that has its canonical text stored is checked on that text (its other columns are
 * compared with it; its `data` is not read, the database holding it equal to the text's) and only the others
 * have their text rebuilt from the columns. Pass it only when `canonicalTextGuarded` says so.
 */
export async function auditRecordsForCheck(
  db: Queryable,
  fromSeq: number,
  toSeq: number,
  storedText: boolean,
): Promise<CheckedRecord[]> {
  const rows = await queryArrays<
    [
      number,
      string,
      string,
      string,
      string | null,
      string | null,
      string | null,
      string | null,
      string | null,
      string | null,
      string,
      string,
      string | null,
    ]
  >(
    db,
    `SELECT seq, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), kind, actor, outcome_id, manifest_id,
            subagent_id, orchestrator_id, verdict,
            ${storedText ? 'CASE WHEN canonical IS NULL THEN data::text END, prev_hash, hash, canonical' : 'data::text, prev_hash, hash, NULL'}
     FROM audit_records WHERE seq >= $1 AND seq <= $2 ORDER BY seq`,
    [fromSeq, toSeq],
  )
  return rows.map((r) => {
    const fields = {
      seq: r[0],
      at: r[1],
      kind: r[2] as AuditRecord['kind'],
      actor: r[3],
      outcome_id: r[4],
      manifest_id: r[5],
      subagent_id: r[6],
      orchestrator_id: r[7],
      verdict: r[8],
      prev_hash: r[10],
      hash: r[11],
    }
    return r[12] === null
      ? checkedRecord({ ...fields, data: JSON.parse(r[9]!) })
      : storedRecord(fields, r[12])
  })
}

/** The constraint that holds each record's `data` equal to its stored canonical text's (migration 007). */
const CANONICAL_DATA_CONSTRAINT = 'audit_records_canonical_data'

/**
 * Whether the database still holds every record's `data` equal to its stored canonical text: the constraint is
 * there, validated, and says what it said when created. Someone who can drop it can also write a `data` that
 * disagrees with the text; verification then rebuilds every record's text from its columns instead.
 */
export async function canonicalTextGuarded(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ def: string }>(
    `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
     WHERE conrelid = 'audit_records'::regclass AND conname = $1 AND contype = 'c' AND convalidated`,
    [CANONICAL_DATA_CONSTRAINT],
  )
  return rows.length === 1 && rows[0]!.def.replace(/\s+/g, ' ') === CANONICAL_DATA_CHECK
}

/** How PostgreSQL prints the constraint's check (14 to 17 alike). */
const CANONICAL_DATA_CHECK = "CHECK (((canonical IS NULL) OR (((canonical)::jsonb -> 'data'::text) = data)))"
