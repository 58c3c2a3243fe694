import { boundedPageQuery } from '../bounded-page.ts'
import { named, type Statement, statement } from '../statement.ts'

/**
 * manifests: every signed manifest of every case kind, one feed.
 * id; kind (the `kind` the manifest carries); case_kind + case_id (the case it decides); case_round (0, or a
 * review's revision); subagent_id (for filters; null for kinds without one); verdict; directive; final (no
 * further manifest in this round); inputs_digest (fingerprint of the decision's inputs: deciding unchanged inputs
 * again returns the same manifest); issued_at; audit_seq (seq of its manifest.issued record, set by the sequencer; null until then); manifest_jcs (the signed JCS text, served as stored); manifest_digest; jws.
 */
export interface ManifestRow {
  id: string
  kind: string
  case_kind: string
  case_id: string
  case_round: number
  subagent_id: string | null
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

const COLUMNS = `id, kind, case_kind, case_id, case_round, subagent_id, verdict, directive, final, inputs_digest,
  issued_at, audit_seq, manifest_jcs, manifest_digest, jws`

const M_COLUMNS = COLUMNS.split(',')
  .map((column) => `m.${column.trim()}`)
  .join(', ')

/**
 * The page of manifests in log order, bounded in bytes (src/db/bounded-page.ts): an envelope is its manifest's
 * text, its JWS (whose payload is the manifest again, base64url) and a digest, seq and member names.
 */
const MANIFEST_PAGE = boundedPageQuery({
  table: 'manifests',
  alias: 'm',
  columns: M_COLUMNS,
  where: `($1::text IS NULL OR m.kind = $1)
       AND ($2::text IS NULL OR (m.case_kind = $2 AND m.case_id = $3::uuid))
       AND ($4::text IS NULL OR m.subagent_id = $4)
       AND ($5::text IS NULL OR m.verdict = $5) AND ($6::text IS NULL OR m.directive = $6)
       AND ($7::timestamptz IS NULL OR m.issued_at >= $7) AND m.audit_seq > coalesce($8::bigint, 0)`,
  order: ['audit_seq'],
  itemBytes: 'octet_length(m.manifest_jcs) + octet_length(m.jws) + 160',
  limit: '$9',
})

export function manifestInsert(row: ManifestRow): Statement {
  return {
    // INSERT … SELECT, so that it can be made conditional (guardedWrites).
    text: `INSERT INTO manifests (${COLUMNS})
     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15`,
    values: [
      row.id,
      row.kind,
      row.case_kind,
      row.case_id,
      row.case_round,
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
    prepare: true,
  }
}

export function manifestById(id: string): Statement<ManifestRow> {
  return statement(`SELECT ${COLUMNS} FROM manifests WHERE id = $1`, [id])
}

/**
 * The envelope of one manifest, and only it: GET /v1/manifests/{id} serves these four columns, and every column
 * more is work for PostgreSQL (its output function) and for the driver (a field to describe and parse) on the
 * busiest read. Prepared: it is that read's one statement.
 */
export function envelopeById(
  id: string,
): Statement<Pick<ManifestRow, 'manifest_jcs' | 'manifest_digest' | 'jws' | 'audit_seq'>> {
  return named('SELECT manifest_jcs, manifest_digest, jws, audit_seq FROM manifests WHERE id = $1', [id])
}

/** The final manifest of one round of a case (a review's revision), if that round has been decided. */
export function finalManifestOfRound(
  ref: { kind: string; id: string },
  round: number,
): Statement<ManifestRow> {
  return statement(
    `SELECT ${COLUMNS} FROM manifests
     WHERE case_kind = $1 AND case_id = $2 AND case_round = $3 AND final AND verdict <> 'HUMAN_RESOLVED'`,
    [ref.kind, ref.id, round],
  )
}

export interface ManifestFilter {
  kind?: string | undefined
  /** The manifests of one case. */
  case?: { kind: string; id: string } | undefined
  subagentId?: string | undefined
  verdict?: string | undefined
  directive?: string | undefined
  since?: Date | undefined
  afterSeq: number | null
}

/**
 * The statement of a page of manifests in log order (`audit_seq` after `filter.afterSeq`), keyset-paged and
 * bounded in bytes (its rows carry `page_rows`, see src/db/bounded-page.ts), for a read-your-writes read
 * (VerifiableLog.readYourWrites, by `audit_seq`; the manifest feed reads it as it is): a manifest the sequencer
 * has not placed yet is not listed.
 */
export function manifestsPage(filter: ManifestFilter, limit: number): Statement<ManifestRow> {
  return statement(MANIFEST_PAGE, [
    filter.kind ?? null,
    filter.case?.kind ?? null,
    filter.case?.id ?? null,
    filter.subagentId ?? null,
    filter.verdict ?? null,
    filter.directive ?? null,
    filter.since ?? null,
    filter.afterSeq,
    limit,
  ])
}

/** The seq of the latest manifest the sequencer placed (null when none). */
export function latestManifestSeq(): Statement<{ seq: number | null }> {
  return statement('SELECT max(audit_seq) AS seq FROM manifests')
}
