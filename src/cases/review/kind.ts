import type { Queryable } from '../../db/pool.ts'
import { splitRowVersion } from '../../db/row-version.ts'
import { queryFirst, queryRows } from '../../db/statement.ts'
import { type ManifestVerdictItem, manifestItem, type ReviewDecided } from '../../domain/review/decide.ts'
import type { ReviewJudge } from '../../domain/review/panel.ts'
import { reviewStatusAfter } from '../../domain/review/transitions.ts'
import type { ReviewMode, ReviewStatus } from '../../domain/review/vocabulary.ts'
import type { AgentIdentity } from '../../domain/shared/agent-identity.ts'
import { hashJson } from '../../domain/shared/canonical-json.ts'
import type { CaseKind } from '../../engine/case-kind.ts'
import { moduleBeside } from '../../engine/decision-workers.ts'
import { decideReviewCase, findingCount, OFFLOAD_MIN_FINDINGS, verdictFields } from './decision.ts'
import {
  latestVerdictsOfRevision,
  type ReviewRow,
  type ReviewSubject,
  type ReviewViewRow,
  reviewById,
  reviewDecisionUpdate,
  reviewDecisionUpdateIf,
  reviewWithVersion,
  type VerdictRow,
} from './repository.ts'

/**
 * The fields of a review manifest the review kind fills (the engine adds kind, id, time and supersedes): the
 * review, the revision decided, and the decision itself.
 */
export interface ReviewManifestContent
  extends Pick<
    ReviewDecided,
    | 'verdict'
    | 'directive'
    | 'verdicts'
    | 'concerns'
    | 'blocking_question'
    | 'blocking_reason'
    | 'divergence'
    | 'findings'
  > {
  review_id: string
  orchestrator_id: string
  review_key: string
  mode: ReviewMode
  /** The revision this manifest decides. */
  revision: number
  /** The subject of that revision. */
  subject: ReviewSubject
  implementer: AgentIdentity
  judges: ReviewJudge[]
}

/** The signed review manifest. */
export interface ReviewManifest extends ReviewManifestContent {
  kind: 'review'
  manifest_id: string
  issued_at: string
  /** The revision's PAUSE this manifest replaces, else null. */
  supersedes: string | null
}

/** What a 202 answer names while verdicts are awaited. */
export interface ReviewPending {
  /** The verdicts needed now, sorted. */
  missing_judges: string[]
}

/** What the decision reads: the latest verdict of each judge in the current revision. */
export interface ReviewInput {
  verdicts: VerdictRow[]
}

/** Verdicts as a review's `verdicts` lists them: the manifest's item shape, sorted by judge_id. */
export function toVerdictItems(review: ReviewViewRow): ManifestVerdictItem[] {
  const judges = new Map(review.judges.map((judge) => [judge.judge_id, judge]))
  return review.verdicts
    .map((row) => manifestItem(review.mode, judges.get(row.judge_id)!, verdictFields(row)))
    .sort((x, y) => (x.judge_id < y.judge_id ? -1 : x.judge_id > y.judge_id ? 1 : 0))
}

/**
 * Reviews on the case engine (docs/reviews.md): the panel's verdicts of the current revision in, one decision
 * out. A review's round is its revision: a REVISE is final for its revision only, and the next revision is
 * decided afresh; a PAUSE is not final, so the next manifest of the same revision supersedes it. Reviews never
 * escalate: a change still blocked at the ceiling is handed back to the orchestrator's user.
 */
export const reviewCase: CaseKind<ReviewRow, ReviewInput, ReviewManifestContent, ReviewPending> = {
  name: 'review',
  manifestKind: 'review',
  noun: 'review',

  lock: (tx, id) => queryFirst(tx, reviewById(id, { lock: true })),
  find: (db, id) => queryFirst(db, reviewById(id)),
  caseId: (review) => review.id,
  status: (review): ReviewStatus => review.status,
  manifestId: (review) => review.manifest_id,
  round: (review) => review.revision,
  auditSubject: (review) => ({ orchestrator_id: review.orchestrator_id, data: { review_id: review.id } }),
  auditQuery: (id) => ({ data: { review_id: id } }),

  async loadInput(tx: Queryable, review: ReviewRow): Promise<ReviewInput> {
    return { verdicts: await queryRows(tx, latestVerdictsOfRevision(review.id, review.revision)) }
  },

  // A replaced NEEDS_CONTEXT verdict has a new attempt number, so inputs never repeat within a revision even
  // when a judge returns to an earlier body: each set of verdicts gets its own manifest.
  inputsDigest: (review, input) =>
    hashJson({
      revision: review.revision,
      verdicts: input.verdicts.map((v) => [v.judge_id, v.attempt, v.verdict_digest]).sort(),
    }),

  decide: decideReviewCase,
  // Panels of thousands of findings take tens of milliseconds to merge and canonicalize: a worker thread does it.
  offload: {
    when: (_review, input) => findingCount(input) >= OFFLOAD_MIN_FINDINGS,
    decision: moduleBeside(import.meta.url, './decision', 'decideReviewCase'),
  },

  recordDecision(review, decision, manifestId) {
    return reviewDecisionUpdate(review.id, reviewDecisionState(review, decision.content, manifestId))
  },

  // Every input of a review's decision writes its row: a verdict (by a trigger, migration 009), a new revision,
  // a decision.
  optimistic: {
    read: async (db, id) => splitRowVersion(await queryFirst(db, reviewWithVersion(id))),
    recordDecisionIf(review, version, decision, manifestId) {
      return reviewDecisionUpdateIf(
        review.id,
        version,
        reviewDecisionState(review, decision.content, manifestId),
      )
    },
  },
}

function reviewDecisionState(review: ReviewRow, content: ReviewManifestContent, manifestId: string) {
  return {
    status: reviewStatusAfter(content.directive),
    manifestId,
    revision: review.revision,
    directive: content.directive,
  }
}
