import type { Queryable } from '../pool.ts'

/**
 * manifests: every manifest issued. id; outcome_id; subagent_id (for filters); verdict; directive; final
 * (PROCEED and HALT are final, REEVALUATE is not); inputs_digest (fingerprint of the decision's inputs);
 * issued_at; audit_seq (seq of its manifest.issued record, set by the sequencer; null until then); manifest_jcs (the signed JCS text);
 * manifest_digest; jws.
 */
export interface ManifestRow {
  id: string
  outcome_id: string
  subagent_id: string
  verdict: string
  directive: string
  final: boolean
  inputs_digest: string
  issued_at: Date
  audit_seq: number | null
  manifest_jcs: string
  manifest_digest: string
  jws: string
}

const COLUMNS =
  'id, outcome_id, subagent_id, verdict, directive, final, inputs_digest, issued_at, audit_seq, manifest_jcs, manifest_digest, jws'

export async function insertManifest(db: Queryable, row: ManifestRow): Promise<void> {
  await db.query(
    `INSERT INTO manifests (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      row.id,
      row.outcome_id,
      row.subagent_id,
      row.verdict,
      row.directive,
      row.final,
      row.inputs_digest,
      row.issued_at,
      row.audit_seq,
      row.manifest_jcs,
      row.manifest_digest,
      row.jws,
    ],
  )
}

export async function findManifest(db: Queryable, id: string): Promise<ManifestRow | undefined> {
  const { rows } = await db.query<ManifestRow>(`SELECT ${COLUMNS} FROM manifests WHERE id = $1`, [id])
  return rows[0]
}

export interface ManifestFilter {
  subagentId?: string | undefined
  outcomeId?: string | undefined
  verdict?: string | undefined
  directive?: string | undefined
  since?: Date | undefined
  afterSeq: number | null
}

/** In log order (audit_seq); manifests the sequencer has not placed yet are not listed. */
export async function listManifests(
  db: Queryable,
  filter: ManifestFilter,
  limit: number,
): Promise<ManifestRow[]> {
  const { rows } = await db.query<ManifestRow>(
    `SELECT ${COLUMNS} FROM manifests
     WHERE ($1::text IS NULL OR subagent_id = $1) AND ($2::uuid IS NULL OR outcome_id = $2)
       AND ($3::text IS NULL OR verdict = $3) AND ($4::text IS NULL OR directive = $4)
       AND ($5::timestamptz IS NULL OR issued_at >= $5) AND audit_seq > coalesce($6::bigint, 0)
     ORDER BY audit_seq LIMIT $7`,
    [
      filter.subagentId ?? null,
      filter.outcomeId ?? null,
      filter.verdict ?? null,
      filter.directive ?? null,
      filter.since ?? null,
      filter.afterSeq,
      limit,
    ],
  )
  return rows
}

export async function latestManifestSeq(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ seq: number | null }>('SELECT max(audit_seq) AS seq FROM manifests')
  return rows[0]?.seq ?? 0
}

/** probe_runs: one probe execution per outcome and evaluation round (inputs_digest), claimed before it runs. */
export interface ProbeRunRow {
  claimed_until: Date
  record: unknown | null
}

export async function findProbeRun(db: Queryable, outcomeId: string, inputsDigest: string) {
  const { rows } = await db.query<ProbeRunRow>(
    'SELECT claimed_until, record FROM probe_runs WHERE outcome_id = $1 AND inputs_digest = $2',
    [outcomeId, inputsDigest],
  )
  return rows[0]
}

export async function claimProbeRun(db: Queryable, outcomeId: string, inputsDigest: string, until: Date) {
  await db.query(
    `INSERT INTO probe_runs (outcome_id, inputs_digest, claimed_until) VALUES ($1, $2, $3)
     ON CONFLICT (outcome_id, inputs_digest) DO UPDATE SET claimed_until = EXCLUDED.claimed_until
     WHERE probe_runs.record IS NULL`,
    [outcomeId, inputsDigest, until],
  )
}

export async function storeProbeRunRecord(
  db: Queryable,
  outcomeId: string,
  inputsDigest: string,
  record: unknown,
) {
  await db.query(
    `UPDATE probe_runs SET record = $3::jsonb WHERE outcome_id = $1 AND inputs_digest = $2 AND record IS NULL`,
    [outcomeId, inputsDigest, JSON.stringify(record)],
  )
}

/** Ends a claim early (its holder failed), so the next evaluate call runs the probe again. */
export async function releaseProbeRun(db: Queryable, outcomeId: string, inputsDigest: string) {
  await db.query(
    `UPDATE probe_runs SET claimed_until = now() - interval '1 second'
     WHERE outcome_id = $1 AND inputs_digest = $2 AND record IS NULL`,
    [outcomeId, inputsDigest],
  )
}
