import { boundedPageQuery } from '../../db/bounded-page.ts'
import { rowUpdate, rowWithVersion } from '../../db/row-version.ts'
import {
  builtOnce,
  guardedWrites,
  named,
  type Statement,
  shiftPlaceholders,
  statement,
} from '../../db/statement.ts'
import type { ReviewJudge } from '../../domain/review/panel.ts'
import type { ReviewDirective, ReviewMode, ReviewStatus } from '../../domain/review/vocabulary.ts'
import type { AgentIdentity } from '../../domain/shared/agent-identity.ts'
import type { JsonValue } from '../../domain/shared/canonical-json.ts'
import type { ReportStatus } from '../../domain/status-report.ts'

/*
 * The tables of review cases: reviews and their judges' verdicts. Manifests are the engine's
 * (src/db/repositories/manifests.ts).
 */

/** The change under review, every member present (absent optional ones null). */
export interface ReviewSubject {
  digest: string
  description: string | null
  uri: string | null
}

/**
 * reviews: a change judged by a panel.
 * id; list_seq (insertion order, for cursors); orchestrator_id + review_key (the natural key); request_digest
 * (sha256(JCS(creation body)), for idempotent retries); mode; subject (the current revision's); implementer;
 * judges (as submitted, in submitted order); revision (0, 1, 2); status; manifest_id (the latest manifest) with
 * manifest_revision (the revision it decided) and manifest_directive; created_at.
 */
export interface ReviewRow {
  id: string
  list_seq: number
  orchestrator_id: string
  review_key: string
  request_digest: string
  mode: ReviewMode
  subject: ReviewSubject
  implementer: AgentIdentity
  judges: ReviewJudge[]
  revision: number
  status: ReviewStatus
  manifest_id: string | null
  manifest_revision: number | null
  manifest_directive: ReviewDirective | null
  created_at: Date
}

const REVIEW_COLUMNS = `id, list_seq, orchestrator_id, review_key, request_digest, mode, subject, implementer, judges,
  revision, status, manifest_id, manifest_revision, manifest_directive, created_at`
/** The same columns of `reviews r`. */
const R_REVIEW_COLUMNS = REVIEW_COLUMNS.replace(/\w+/g, 'r.$&')

export type NewReviewRow = Pick<
  ReviewRow,
  | 'id'
  | 'orchestrator_id'
  | 'review_key'
  | 'request_digest'
  | 'mode'
  | 'subject'
  | 'implementer'
  | 'judges'
  | 'created_at'
>

/** The statement of `reviewInsertIfAbsent`, around its audit entries' INSERT. */
const newReviewText = builtOnce(
  (audit) =>
    `WITH created AS (
         INSERT INTO reviews (id, orchestrator_id, review_key, request_digest, mode, subject, implementer, judges,
           revision, status, created_at)
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8::jsonb, 0, 'open', $9)
         ON CONFLICT (orchestrator_id, review_key) DO NOTHING
         RETURNING ${REVIEW_COLUMNS}
       ), audit AS (
         ${shiftPlaceholders(audit, 9)} WHERE EXISTS (SELECT 1 FROM created)
       )
       SELECT * FROM created`,
)

/**
 * Inserts unless the natural key exists, RETURNING the row only when it inserted it (else read `reviewByKey`).
 * `audit` (its audit entries) is written in the same statement, only when the review is: one round trip, no
 * transaction needed.
 */
export function reviewInsertIfAbsent(review: NewReviewRow, audit: Statement): Statement<ReviewRow> {
  return named(newReviewText(audit.text), [
    review.id,
    review.orchestrator_id,
    review.review_key,
    review.request_digest,
    review.mode,
    JSON.stringify(review.subject),
    JSON.stringify(review.implementer),
    JSON.stringify(review.judges),
    review.created_at,
    ...audit.values,
  ])
}

export function reviewByKey(orchestratorId: string, reviewKey: string): Statement<ReviewRow> {
  return statement(`SELECT ${REVIEW_COLUMNS} FROM reviews WHERE orchestrator_id = $1 AND review_key = $2`, [
    orchestratorId,
    reviewKey,
  ])
}

export function reviewById(id: string): Statement<ReviewRow> {
  return statement(`SELECT ${REVIEW_COLUMNS} FROM reviews WHERE id = $1`, [id])
}

/** The review, locked until the transaction ends: the row lock serializes every write to the review (verdicts,
 * revisions, decide). */
export function reviewLock(id: string): Statement<ReviewRow> {
  return statement(`SELECT ${REVIEW_COLUMNS} FROM reviews WHERE id = $1 FOR UPDATE`, [id])
}

/**
 * A review as GET /v1/reviews shows it, read in one statement: its row and the latest verdict of each judge in its
 * current revision (the fields the view reads, in no particular order).
 */
export interface ReviewViewRow extends ReviewRow {
  verdicts: Pick<VerdictRow, 'judge_id' | 'status' | 'body' | 'verdict_digest'>[]
}

const REVIEW_VIEW_COLUMNS = `${R_REVIEW_COLUMNS},
  (SELECT coalesce(json_agg(json_build_object('judge_id', v.judge_id, 'status', v.status, 'body', v.body,
            'verdict_digest', v.verdict_digest)), '[]')
   FROM (SELECT DISTINCT ON (l.judge_id) l.* FROM review_verdicts l
         WHERE l.review_id = r.id AND l.revision = r.revision
         ORDER BY l.judge_id, l.attempt DESC) v) AS verdicts`

/** One review as shown (see ReviewViewRow), in one round trip. */
export function reviewView(id: string): Statement<ReviewViewRow> {
  return named(`SELECT ${REVIEW_VIEW_COLUMNS} FROM reviews r WHERE r.id = $1`, [id])
}

/**
 * A page of reviews as shown, bounded in bytes (src/db/bounded-page.ts): a review's size is its row as JSON and the
 * verdicts of its current revision.
 */
const REVIEW_PAGE = boundedPageQuery({
  table: 'reviews',
  alias: 'r',
  columns: REVIEW_VIEW_COLUMNS,
  where: `($1::text IS NULL OR r.orchestrator_id = $1) AND ($2::text IS NULL OR r.status = $2)
       AND ($3::bigint IS NULL OR r.list_seq > $3)`,
  order: ['list_seq'],
  itemBytes: `octet_length(row_to_json(r)::text)
    + coalesce((SELECT sum(200 + octet_length(v.body::text)) FROM review_verdicts v
                WHERE v.review_id = r.id AND v.revision = r.revision), 0)`,
  limit: '$4',
})

/** A page of reviews as shown (see ReviewViewRow), in creation order after `afterSeq`, in one round trip. */
export function reviewViewsPage(
  filter: { orchestratorId?: string | undefined; status?: ReviewStatus | undefined; afterSeq: number | null },
  limit: number,
): Statement<ReviewViewRow> {
  return statement(REVIEW_PAGE, [
    filter.orchestratorId ?? null,
    filter.status ?? null,
    filter.afterSeq,
    limit,
  ])
}

/** The review's state after a manifest: its status, and the manifest as its latest. */
export interface ReviewDecisionState {
  status: ReviewStatus
  manifestId: string
  revision: number
  directive: ReviewDirective
}

const DECISION = rowUpdate(
  'reviews',
  'status = $2, manifest_id = $3, manifest_revision = $4, manifest_directive = $5',
)

function decisionValues(id: string, state: ReviewDecisionState): unknown[] {
  return [id, state.status, state.manifestId, state.revision, state.directive]
}

export function reviewDecisionUpdate(id: string, state: ReviewDecisionState): Statement {
  return DECISION.update(decisionValues(id, state))
}

/** reviewDecisionUpdate, only while the row is at `version` (reviewWithVersion); RETURNING id when it was. */
export function reviewDecisionUpdateIf(id: string, version: string, state: ReviewDecisionState): Statement {
  return DECISION.updateIf(decisionValues(id, state), version)
}

/** The review with its row version, without locking it: what a decision without a transaction reads
 * (split it with splitRowVersion). */
export function reviewWithVersion(id: string) {
  return rowWithVersion<ReviewRow>('reviews', REVIEW_COLUMNS, id)
}

/** Starts the next revision with the revised subject; its verdicts start afresh (they are keyed by revision). */
export function reviewRevisionUpdate(
  id: string,
  revision: { revision: number; subject: ReviewSubject },
): Statement {
  return statement('UPDATE reviews SET revision = $2, subject = $3::jsonb WHERE id = $1', [
    id,
    revision.revision,
    JSON.stringify(revision.subject),
  ])
}

/**
 * review_verdicts: every verdict a judge returned.
 * id; review_id; revision; judge_id; attempt (1, then +1 for each replacement of a NEEDS_CONTEXT verdict);
 * status; body (as submitted); verdict_digest (sha256(JCS(body))); received_at; api_key_id (who submitted it).
 */
export interface VerdictRow {
  id: string
  review_id: string
  revision: number
  judge_id: string
  attempt: number
  status: ReportStatus
  body: { [key: string]: JsonValue }
  verdict_digest: string
  received_at: Date
  api_key_id: string | null
}

const VERDICT_COLUMNS =
  'id, review_id, revision, judge_id, attempt, status, body, verdict_digest, received_at, api_key_id'

/**
 * The review, its row version (xmin: every write to the row gives it a new one) and the latest verdict of each
 * judge in its current revision, in one statement and one snapshot, without locking anything: what a verdict
 * submitted without a transaction judges against (`verdictInsertIf`).
 */
export function reviewWithVerdicts(id: string): Statement<ReviewWithVerdictsRow> {
  return named(
    `SELECT ${R_REVIEW_COLUMNS}, r.xmin::text AS row_version,
         (SELECT coalesce(json_agg(v ORDER BY v.judge_id), '[]'::json) FROM (
            SELECT DISTINCT ON (judge_id) ${VERDICT_COLUMNS} FROM review_verdicts
            WHERE review_id = r.id AND revision = r.revision
            ORDER BY judge_id, attempt DESC) v) AS verdicts
     FROM reviews r WHERE r.id = $1`,
    [id],
  )
}

export type ReviewWithVerdictsRow = ReviewRow & { row_version: string; verdicts: JsonVerdict[] }

/** A row of `reviewWithVerdicts` as the review, its version and its verdicts (undefined when there was none). */
export function splitReviewWithVerdicts(
  row: ReviewWithVerdictsRow | undefined,
): { review: ReviewRow; version: string; verdicts: VerdictRow[] } | undefined {
  if (!row) return undefined
  const { row_version, verdicts, ...review } = row
  return {
    review,
    version: row_version,
    verdicts: verdicts.map((v) => ({ ...v, received_at: new Date(v.received_at) })),
  }
}

/** A verdict row as json_agg gives it: timestamps as text. */
type JsonVerdict = Omit<VerdictRow, 'received_at'> & { received_at: string }

/**
 * `writes` (the verdict and its record) only if the review row is still at `version`: one statement, no
 * transaction. The guard locks the row, so it waits for a writer holding it (a decision, a new revision, another
 * verdict) and then sees the row as that writer left it: anything written since the read (every verdict moves
 * the row too, by a trigger: migration 009) gave it another version, and nothing is written. A row when it
 * wrote, none when it did not.
 */
export function verdictInsertIf(reviewId: string, version: string, writes: readonly Statement[]): Statement {
  return guardedWrites(
    named('SELECT id FROM reviews WHERE id = $1 AND xmin::text = $2 FOR NO KEY UPDATE', [reviewId, version]),
    writes,
  )
}

export function verdictInsert(row: VerdictRow): Statement {
  return {
    // INSERT … SELECT, so that it can be made conditional (guardedWrites).
    text: `INSERT INTO review_verdicts (${VERDICT_COLUMNS}) SELECT $1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10`,
    values: [
      row.id,
      row.review_id,
      row.revision,
      row.judge_id,
      row.attempt,
      row.status,
      JSON.stringify(row.body),
      row.verdict_digest,
      row.received_at,
      row.api_key_id,
    ],
    prepare: true,
  }
}

/** The latest verdict of each judge in one revision of a review. */
export function latestVerdictsOfRevision(reviewId: string, revision: number): Statement<VerdictRow> {
  return statement(
    `SELECT DISTINCT ON (judge_id) ${VERDICT_COLUMNS} FROM review_verdicts
     WHERE review_id = $1 AND revision = $2
     ORDER BY judge_id, attempt DESC`,
    [reviewId, revision],
  )
}
