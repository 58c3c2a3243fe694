import { randomUUID } from 'node:crypto'
import { appendAuditRecords, auditAppend, auditAppended } from '../../audit-log/append.ts'
import { PG, pgErrorCode } from '../../db/pg-errors.ts'
import type { Queryable } from '../../db/pool.ts'
import { withTransaction } from '../../db/pool.ts'
import { finalManifestOfRound } from '../../db/repositories/manifests.ts'
import { queryFirst, queryRows, runStatement } from '../../db/statement.ts'
import { type BoundVerdict, verdictLimitBreach } from '../../domain/review/manifest-bound.ts'
import { checkPanel, type SubmittedJudge, toReviewJudge } from '../../domain/review/panel.ts'
import {
  acceptRevision,
  acceptVerdict,
  type ManifestRef,
  type ReviewState,
  type RevisionRefusal,
  type VerdictRefusal,
} from '../../domain/review/transitions.ts'
import type { ReviewMode, ReviewStatus } from '../../domain/review/vocabulary.ts'
import type { AgentIdentity } from '../../domain/shared/agent-identity.ts'
import { canonicalJson, hashJson, type JsonValue, sha256 } from '../../domain/shared/canonical-json.ts'
import { caseAuditEntry } from '../../engine/case-audit.ts'
import { type InputTaken, type InputWrite, submitInput, writeInput } from '../../engine/case-inputs.ts'
import { AppError, found, limitExceeded } from '../../errors.ts'
import { type Page, type PageRequest, readSeqPage } from '../../pagination.ts'
import type { Actor, ServiceContext } from '../../services/context.ts'
import { reviewCase, toVerdictItems } from './kind.ts'
import {
  latestVerdictsOfRevision,
  type NewReviewRow,
  type ReviewRow,
  type ReviewSubject,
  type ReviewViewRow,
  reviewById,
  reviewByKey,
  reviewInsertIfAbsent,
  reviewRevisionUpdate,
  reviewView,
  reviewViewsPage,
  reviewWithVerdicts,
  splitReviewWithVerdicts,
  type VerdictRow,
  verdictInsert,
  verdictInsertIf,
} from './repository.ts'
import type { VerdictBody } from './schemas.ts'

/** The change under review as a request carries it; `description` and `uri` are optional. */
export interface SubmittedSubject {
  digest: string
  description?: string | null | undefined
  uri?: string | null | undefined
}

/** `POST /v1/reviews`: the change, who implemented it, and the panel that judges it in a mode. */
export interface NewReview {
  orchestrator_id: string
  review_key: string
  mode: ReviewMode
  subject: SubmittedSubject
  implementer: AgentIdentity
  judges: SubmittedJudge[]
}

/**
 * Checks the caller may write to this review (and anything else that needs the review to judge the request),
 * throwing to refuse. Services call it on the row they lock, before any rule of their own: the HTTP layer
 * decides what "may write" means.
 */
export type AuthorizeReviewWrite = (review: ReviewRow) => void

/** `POST /v1/reviews/{id}/revisions`: the implementer's revised change. */
export interface RevisionSubmission {
  subject: SubmittedSubject
}

/**
 * `POST /v1/reviews`. The panel is checked against its mode and the independence rules first, every violation
 * reported at once (422; the iron law has its own problem type). The natural key (orchestrator_id, review_key)
 * makes a retry of the same body (JCS-equal) a 200 with the review as it stands; another body under it is a 409.
 */
export async function createReview(ctx: Pick<ServiceContext, 'db'>, body: NewReview, actor: Actor) {
  const panel = checkPanel({ mode: body.mode, implementer: body.implementer, judges: body.judges })
  if (panel.violations.length > 0) {
    throw new AppError(
      panel.iron_law_violated ? 'JUDGE_NOT_INDEPENDENT' : 'UNPROCESSABLE',
      panel.violations.map((v) => v.message).join('; '),
      {},
      panel.violations.map((v) => ({ path: v.path, message: v.message })),
    )
  }
  const requestDigest = hashJson(body)
  const now = new Date()
  const review: NewReviewRow = {
    id: randomUUID(),
    orchestrator_id: body.orchestrator_id,
    review_key: body.review_key,
    request_digest: requestDigest,
    mode: body.mode,
    subject: toSubject(body.subject),
    implementer: { model: body.implementer.model, context_id: body.implementer.context_id },
    judges: body.judges.map(toReviewJudge),
    created_at: now,
  }
  const subject = reviewCase.auditSubject({
    ...review,
    list_seq: 0,
    revision: 0,
    status: 'open',
    manifest_id: null,
    manifest_revision: null,
    manifest_directive: null,
  })
  const audit = auditAppend([
    caseAuditEntry(subject, {
      kind: 'review.created',
      actor,
      at: now.toISOString(),
      data: { mode: body.mode },
    }),
  ])
  // One statement, no transaction: the review and its record, or nothing when the key is taken.
  const row = await queryFirst(ctx.db, reviewInsertIfAbsent(review, audit))
  if (!row) {
    const existing = await queryFirst(ctx.db, reviewByKey(review.orchestrator_id, review.review_key))
    if (!existing) throw new Error('review natural key conflict without a row')
    if (existing.request_digest !== requestDigest) {
      throw new AppError(
        'CONFLICT',
        `review (${body.orchestrator_id}, ${body.review_key}) already exists with a different body`,
        { review_id: existing.id },
      )
    }
    return { created: false, view: await getReview(ctx, existing.id) }
  }
  auditAppended(ctx.db)
  return { created: true, view: toReviewView({ ...row, verdicts: [] }) }
}

/** `unchanged`: the judge's recorded verdict again, answered with the stored one, nothing written. */
export type VerdictResult = Exclude<InputTaken<VerdictAnswer>, { kind: 'late' }>

/**
 * `POST /v1/reviews/{id}/verdicts`: one judge's return. A verdict lands either before a decision (and counts) or
 * after it (and is refused naming the manifest); the state rules are `acceptVerdict`'s. Refused verdicts write
 * nothing. Tried first without a transaction (`submitVerdictWithoutTransaction`); whatever that cannot settle is
 * judged again under the review's row lock.
 */
export async function submitVerdict(
  ctx: Pick<ServiceContext, 'db'>,
  reviewId: string,
  body: VerdictBody,
  actor: Actor,
  authorize: AuthorizeReviewWrite,
): Promise<VerdictResult> {
  const canonicalText = canonicalJson(body)
  const submission = {
    judge_id: body.judge_id,
    revision: body.revision,
    verdict_digest: sha256(canonicalText),
  }
  /** A verdict over a limit is refused (422) after the replay of an accepted one and before a state's 409. */
  const checkLimits = (review: ReviewRow, recorded: readonly VerdictRow[]) => {
    const over = verdictLimitBreach(
      review,
      { ...(body as BoundVerdict), digest: submission.verdict_digest },
      canonicalText,
      recorded.map((row) => ({ ...(row.body as unknown as BoundVerdict), digest: row.verdict_digest })),
    )
    if (over) {
      throw limitExceeded(
        over,
        over.limit === 'manifest_bytes'
          ? 'with this verdict, the review’s next manifest could pass the size a manifest may have'
          : 'this verdict is over a limit of one verdict',
      )
    }
  }
  return submitInput(ctx.db, {
    first: (db) =>
      submitVerdictWithoutTransaction(db, reviewId, body, submission, actor, authorize, checkLimits),
    wrote: (answer) => answer.kind === 'created',
    locked: async (tx) => {
      const review = await lockReview(tx, reviewId)
      authorize(review)
      const recorded = await queryRows(tx, latestVerdictsOfRevision(reviewId, review.revision))
      const acceptance = acceptVerdict(reviewState(review), recorded, submission)
      const existing = recorded.find((v) => v.judge_id === body.judge_id)
      if (acceptance.kind !== 'replay') checkLimits(review, recorded)
      switch (acceptance.kind) {
        case 'replay':
          return { kind: 'unchanged', answer: toVerdictAnswer(existing!) }
        case 'refuse':
          throw await verdictRefusalError(tx, review, body.revision, acceptance.refusal)
        case 'record':
          break
      }
      const { row, write } = verdictWrite(review, existing, body, submission.verdict_digest, actor)
      try {
        await writeInput(tx, write)
      } catch (err) {
        // Only reachable if something other than the row lock let two verdicts of one judge through: the unique
        // key still lets exactly one win.
        if (pgErrorCode(err) === PG.UNIQUE_VIOLATION) {
          throw new AppError(
            'CONFLICT',
            `judge ${JSON.stringify(body.judge_id)} returned concurrently; retry`,
            {
              manifest_id: review.manifest_id,
              revision: review.revision,
            },
          )
        }
        throw err
      }
      return { kind: 'created', answer: toVerdictAnswer(row) }
    },
  })
}

/**
 * A verdict without a transaction, which settles the common cases in two round trips: read the review, its row
 * version and its verdicts in one statement; judge the verdict; write it and its record in one statement that
 * writes only if the review row is still at the version read (`verdictInsertIf`: another verdict, a decision or
 * a new revision since gave it another). A replay is answered from the read. Answers undefined, writing nothing,
 * for the transaction to judge again under the row lock: a refusal (its problem names a manifest read under that
 * lock), a review changed since the read, or another verdict of the same judge that took the attempt first.
 */
async function submitVerdictWithoutTransaction(
  db: Queryable,
  reviewId: string,
  body: VerdictBody,
  submission: { judge_id: string; revision: number; verdict_digest: string },
  actor: Actor,
  authorize: AuthorizeReviewWrite,
  checkLimits: (review: ReviewRow, recorded: readonly VerdictRow[]) => void,
): Promise<VerdictResult | undefined> {
  const read = found(
    splitReviewWithVerdicts(await queryFirst(db, reviewWithVerdicts(reviewId))),
    `no review ${reviewId}`,
  )
  authorize(read.review)
  const acceptance = acceptVerdict(reviewState(read.review), read.verdicts, submission)
  const existing = read.verdicts.find((v) => v.judge_id === body.judge_id)
  if (acceptance.kind === 'replay') return { kind: 'unchanged', answer: toVerdictAnswer(existing!) }
  // Judged on this read; the write below happens only if the review is still as read.
  checkLimits(read.review, read.verdicts)
  if (acceptance.kind === 'refuse') return undefined
  const { row, write } = verdictWrite(read.review, existing, body, submission.verdict_digest, actor)
  const writes = [...write.writes, auditAppend(write.audit)]
  if (!(await queryFirst(db, verdictInsertIf(reviewId, read.version, writes)))) return undefined
  return { kind: 'created', answer: toVerdictAnswer(row) }
}

/**
 * A judge's new verdict for the review's current revision, as an input's write: the verdict, its record, and the
 * review row's new version, which the trigger of migration 009 writes for every verdict.
 */
function verdictWrite(
  review: ReviewRow,
  existing: VerdictRow | undefined,
  body: VerdictBody,
  verdictDigest: string,
  actor: Actor,
): { row: VerdictRow; write: InputWrite } {
  const row: VerdictRow = {
    id: randomUUID(),
    review_id: review.id,
    revision: review.revision,
    judge_id: body.judge_id,
    attempt: (existing?.attempt ?? 0) + 1,
    status: body.status,
    body: body as unknown as { [key: string]: JsonValue },
    verdict_digest: verdictDigest,
    received_at: new Date(),
    api_key_id: actor === 'system' ? null : actor,
  }
  const audit = [
    caseAuditEntry(reviewCase.auditSubject(review), {
      kind: 'verdict.recorded',
      actor,
      at: row.received_at.toISOString(),
      data: {
        judge_id: row.judge_id,
        revision: row.revision,
        status: row.status,
        verdict_digest: row.verdict_digest,
      },
    }),
  ]
  return {
    row,
    write: { writes: [verdictInsert(row)], touch: { trigger: 'review_verdicts_move_review' }, audit },
  }
}

/**
 * A refused verdict as a problem: an unknown judge is a 422; a state conflict is a 409 that names the manifest
 * the caller should read — the final manifest of the revision the verdict was for, when that revision is over,
 * else the review's latest — and the review's current revision.
 */
async function verdictRefusalError(
  tx: Queryable,
  review: ReviewRow,
  submittedRevision: number,
  refusal: VerdictRefusal,
): Promise<AppError> {
  if (refusal.category === 'unprocessable') {
    return new AppError('UNPROCESSABLE', refusal.detail, {}, [
      { path: '/judge_id', message: 'unknown judge' },
    ])
  }
  let manifestId = 'manifest_id' in refusal ? refusal.manifest_id : review.manifest_id
  if (refusal.code === 'stale_revision' && submittedRevision < review.revision) {
    const ended = await queryFirst(
      tx,
      finalManifestOfRound({ kind: reviewCase.name, id: review.id }, submittedRevision),
    )
    manifestId = ended?.id ?? manifestId
  }
  return new AppError('CONFLICT', refusal.detail, { manifest_id: manifestId, revision: review.revision })
}

/**
 * `POST /v1/reviews/{id}/revisions`: the implementer revised after a REVISE. The next revision starts with no
 * verdicts; the rules (a changed digest, the ceiling, only after a REVISE of the current revision) are
 * `acceptRevision`'s.
 */
export async function startRevision(
  ctx: Pick<ServiceContext, 'db'>,
  reviewId: string,
  body: RevisionSubmission,
  actor: Actor,
  authorize: AuthorizeReviewWrite,
) {
  return withTransaction(ctx.db, async (tx) => {
    const review = await lockReview(tx, reviewId)
    authorize(review)
    const acceptance = acceptRevision(
      {
        revision: review.revision,
        subject_digest: review.subject.digest,
        latest_manifest: latestManifest(review),
      },
      body.subject.digest,
    )
    if (acceptance.kind === 'refuse') throw revisionRefusalError(acceptance.refusal)
    const revised: ReviewRow = { ...review, revision: acceptance.revision, subject: toSubject(body.subject) }
    await runStatement(
      tx,
      reviewRevisionUpdate(reviewId, { revision: revised.revision, subject: revised.subject }),
    )
    await appendAuditRecords(tx, [
      caseAuditEntry(reviewCase.auditSubject(review), {
        kind: 'revision.recorded',
        actor,
        data: { revision: revised.revision, subject_digest: revised.subject.digest },
      }),
    ])
    return toReviewView({ ...revised, verdicts: [] })
  })
}

function revisionRefusalError(refusal: RevisionRefusal): AppError {
  if (refusal.category === 'unprocessable') {
    return new AppError('UNPROCESSABLE', refusal.detail, {}, [
      { path: '/subject/digest', message: 'the same digest as the subject under review' },
    ])
  }
  return new AppError('CONFLICT', refusal.detail, { manifest_id: refusal.manifest_id })
}

/** GET /v1/reviews/{id}, in one statement. */
export async function getReview(ctx: Pick<ServiceContext, 'db'>, reviewId: string) {
  const review = found(await queryFirst(ctx.db, reviewView(reviewId)), `no review ${reviewId}`)
  return toReviewView(review)
}

/** GET /v1/reviews: oldest first, each page in one statement. */
export async function pageReviews(
  ctx: Pick<ServiceContext, 'db'>,
  filter: { orchestratorId?: string | undefined; status?: ReviewStatus | undefined },
  page: PageRequest,
): Promise<Page<ReviewView>> {
  return readSeqPage(
    page,
    (afterSeq, limit) => queryRows(ctx.db, reviewViewsPage({ ...filter, afterSeq }, limit)),
    (row) => row.list_seq,
    toReviewView,
  )
}

async function lockReview(tx: Queryable, reviewId: string): Promise<ReviewRow> {
  return found(await queryFirst(tx, reviewById(reviewId, { lock: true })), `no review ${reviewId}`)
}

function latestManifest(review: ReviewRow): ManifestRef | null {
  if (
    review.manifest_id === null ||
    review.manifest_revision === null ||
    review.manifest_directive === null
  ) {
    return null
  }
  return {
    manifest_id: review.manifest_id,
    revision: review.manifest_revision,
    directive: review.manifest_directive,
  }
}

function reviewState(review: ReviewRow): ReviewState {
  return {
    mode: review.mode,
    revision: review.revision,
    judges: review.judges,
    latest_manifest: latestManifest(review),
  }
}

function toSubject(subject: SubmittedSubject): ReviewSubject {
  return { digest: subject.digest, description: subject.description ?? null, uri: subject.uri ?? null }
}

/** A review as the API shows it; `verdicts` are those of the current revision. */
function toReviewView(row: ReviewViewRow) {
  const { id, orchestrator_id, review_key, mode, subject, implementer, judges, revision, status } = row
  return {
    review_id: id,
    orchestrator_id,
    review_key,
    mode,
    subject,
    implementer,
    judges,
    revision,
    status,
    verdicts: toVerdictItems(row),
    manifest_id: row.manifest_id,
    created_at: row.created_at.toISOString(),
  }
}

export type ReviewView = ReturnType<typeof toReviewView>

/** The answer to an accepted (201) or repeated (200) verdict. */
function toVerdictAnswer({ review_id, judge_id, revision, status, verdict_digest, received_at }: VerdictRow) {
  return { review_id, judge_id, revision, status, verdict_digest, received_at: received_at.toISOString() }
}

export type VerdictAnswer = ReturnType<typeof toVerdictAnswer>
