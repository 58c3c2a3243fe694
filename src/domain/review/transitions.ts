/**
 * The state rules of a review as pure functions: may this verdict be recorded, may the implementer start a
 * new revision, should decide issue a manifest or return the one it has, and where the review stands after
 * a manifest. Each answer is either "go ahead" or a named refusal; a refusal's `category` says whether the
 * request contradicts itself against what it references (`unprocessable`) or the review's state
 * (`conflict`), and the caller maps that to its error codes.
 *
 * Checks run in a fixed order, references before state, so a request that breaks several rules always
 * gets the same refusal.
 */
import type { ReportStatus } from '../status-report.ts'
import type { SubmittedJudge } from './panel.ts'
import {
  isFinalForRevision,
  MAX_REVISION,
  type ReviewDirective,
  type ReviewMode,
  type ReviewStatus,
} from './vocabulary.ts'

/** What the rules need of a manifest already issued for the review. */
export interface ManifestRef {
  manifest_id: string
  revision: number
  directive: ReviewDirective
}

export interface ReviewState {
  mode: ReviewMode
  /** The current revision. */
  revision: number
  judges: readonly SubmittedJudge[]
  /** The latest manifest of the review (any revision), or null before the first decide. */
  latest_manifest: ManifestRef | null
}

/** A verdict recorded for the current revision: the latest one of its judge. */
export interface RecordedVerdictRef {
  judge_id: string
  status: ReportStatus
  /** `sha256(JCS(body as submitted))`: equal digests are the same body. */
  verdict_digest: string
}

/** The parts of a submitted verdict the state rules read (its body has passed the envelope schema). */
export interface VerdictSubmission {
  judge_id: string
  revision: number
  verdict_digest: string
}

export type RefusalCategory = 'unprocessable' | 'conflict'

export type VerdictRefusal =
  | { code: 'unknown_judge'; category: 'unprocessable'; detail: string }
  | { code: 'stale_revision'; category: 'conflict'; detail: string; current_revision: number }
  | { code: 'revision_final'; category: 'conflict'; detail: string; manifest_id: string }
  | { code: 'meta_after_decision'; category: 'conflict'; detail: string; manifest_id: string }
  | { code: 'stage_one_pending'; category: 'conflict'; detail: string }
  | { code: 'stage_two_not_running'; category: 'conflict'; detail: string }
  | { code: 'verdict_already_recorded'; category: 'conflict'; detail: string }

export type VerdictAcceptance =
  /** A new verdict for this judge and revision; `replaces` is true when it replaces the judge's NEEDS_CONTEXT. */
  | { kind: 'record'; replaces: boolean }
  /** The judge's recorded verdict again, byte for byte in canonical form: answer with the stored one. */
  | { kind: 'replay' }
  | { kind: 'refuse'; refusal: VerdictRefusal }

/**
 * Whether a judge's verdict may be recorded. In order:
 * 1. an unknown `judge_id` (exact match) → unprocessable;
 * 2. a `revision` other than the current one → stale;
 * 3. the judge's recorded verdict again (same digest) → replay, even once the revision is decided;
 * 4. the revision's manifest is final → refused, naming it;
 * 5. a debate meta-judge once a manifest of this revision exists → refused (it is never waited for, so it
 *    cannot reopen a decision), unless it replaces its own NEEDS_CONTEXT verdict;
 * 6. two_stage: a stage-2 verdict before stage 1 has returned, or after stage 1 returned NEEDS_CONTEXT or
 *    BLOCKED → refused (stage 2 does not run);
 * 7. a judge that already has a different verdict → refused, unless that verdict is NEEDS_CONTEXT (the
 *    caller answered the question; the revision is not final, or step 4 would have refused).
 */
export function acceptVerdict(
  review: ReviewState,
  recorded: readonly RecordedVerdictRef[],
  submission: VerdictSubmission,
): VerdictAcceptance {
  const judge = review.judges.find((j) => j.judge_id === submission.judge_id)
  const who = `judge ${JSON.stringify(submission.judge_id)}`
  if (judge === undefined) {
    return refuse({
      code: 'unknown_judge',
      category: 'unprocessable',
      detail: `${who} is not on this review's panel`,
    })
  }
  if (submission.revision !== review.revision) {
    return refuse({
      code: 'stale_revision',
      category: 'conflict',
      detail: `the verdict is for revision ${submission.revision}; the review is at revision ${review.revision}`,
      current_revision: review.revision,
    })
  }
  const existing = recorded.find((v) => v.judge_id === submission.judge_id)
  if (existing !== undefined && existing.verdict_digest === submission.verdict_digest)
    return { kind: 'replay' }

  const manifest = manifestOfCurrentRevision(review)
  if (manifest !== null && isFinalForRevision(manifest.directive)) {
    return refuse({
      code: 'revision_final',
      category: 'conflict',
      detail: `revision ${review.revision} is decided (${manifest.directive}); no more verdicts are taken for it`,
      manifest_id: manifest.manifest_id,
    })
  }
  const replacesQuestion = existing?.status === 'NEEDS_CONTEXT'
  if (review.mode === 'debate' && judge.role === 'meta' && manifest !== null && !replacesQuestion) {
    return refuse({
      code: 'meta_after_decision',
      category: 'conflict',
      detail: `${who} is the meta-judge and revision ${review.revision} already has a manifest`,
      manifest_id: manifest.manifest_id,
    })
  }
  if (review.mode === 'two_stage' && judge.stage === 2) {
    const specJudge = review.judges.find((j) => j.stage === 1)
    const spec = recorded.find((v) => v.judge_id === specJudge?.judge_id)
    if (spec === undefined) {
      return refuse({
        code: 'stage_one_pending',
        category: 'conflict',
        detail: `${who} judges stage 2, which runs only after stage 1 has returned`,
      })
    }
    if (spec.status === 'NEEDS_CONTEXT' || spec.status === 'BLOCKED') {
      return refuse({
        code: 'stage_two_not_running',
        category: 'conflict',
        detail: `${who} judges stage 2, which does not run: stage 1 returned ${spec.status}`,
      })
    }
  }
  if (existing !== undefined && !replacesQuestion) {
    return refuse({
      code: 'verdict_already_recorded',
      category: 'conflict',
      detail: `${who} already returned ${existing.status} for revision ${review.revision}; only a NEEDS_CONTEXT verdict may be replaced`,
    })
  }
  return { kind: 'record', replaces: existing !== undefined }
}

export interface RevisionState {
  /** The current revision. */
  revision: number
  /** The digest of the subject currently under review. */
  subject_digest: string
  latest_manifest: ManifestRef | null
}

export type RevisionRefusal =
  | { code: 'subject_unchanged'; category: 'unprocessable'; detail: string }
  | { code: 'revision_ceiling'; category: 'conflict'; detail: string; manifest_id: string | null }
  | { code: 'not_after_revise'; category: 'conflict'; detail: string; manifest_id: string | null }

export type RevisionAcceptance =
  /** Start `revision`; verdicts start afresh. */
  { kind: 'revise'; revision: number } | { kind: 'refuse'; refusal: RevisionRefusal }

/**
 * Whether the implementer may start the next revision with a new subject. In order:
 * 1. the new subject digest equals the current one → unprocessable (nothing was revised);
 * 2. the current revision is the ceiling → refused, naming the current manifest if any;
 * 3. the current revision's manifest is not REVISE → refused (revising is the answer to REVISE only; a
 *    REVISE of an earlier revision does not count, its revision has been started already).
 */
export function acceptRevision(state: RevisionState, newSubjectDigest: string): RevisionAcceptance {
  const manifestId = state.latest_manifest?.manifest_id ?? null
  if (newSubjectDigest === state.subject_digest) {
    return {
      kind: 'refuse',
      refusal: {
        code: 'subject_unchanged',
        category: 'unprocessable',
        detail: 'the revised subject has the same digest as the one under review',
      },
    }
  }
  if (state.revision >= MAX_REVISION) {
    return {
      kind: 'refuse',
      refusal: {
        code: 'revision_ceiling',
        category: 'conflict',
        detail: `the review is at revision ${state.revision}, the ceiling; a change still blocked is handed back`,
        manifest_id: manifestId,
      },
    }
  }
  const latest = state.latest_manifest
  if (latest === null || latest.revision !== state.revision || latest.directive !== 'REVISE') {
    return {
      kind: 'refuse',
      refusal: {
        code: 'not_after_revise',
        category: 'conflict',
        detail: `revision ${state.revision} has no REVISE manifest; a revision answers a REVISE`,
        manifest_id: manifestId,
      },
    }
  }
  return { kind: 'revise', revision: state.revision + 1 }
}

export type DecidePlan =
  /** The revision's manifest is final: return it unchanged. */
  | { kind: 'return_manifest'; manifest_id: string }
  /**
   * Decide from the recorded verdicts. A new manifest supersedes `supersedes` (the revision's PAUSE, if any);
   * when the decision equals that PAUSE's, the caller returns the PAUSE instead of issuing a twin.
   */
  | { kind: 'decide'; supersedes: string | null }

/** What decide does for the review's current revision. */
export function planDecide(state: Pick<ReviewState, 'revision' | 'latest_manifest'>): DecidePlan {
  const manifest = manifestOfCurrentRevision(state)
  if (manifest === null) return { kind: 'decide', supersedes: null }
  if (isFinalForRevision(manifest.directive))
    return { kind: 'return_manifest', manifest_id: manifest.manifest_id }
  return { kind: 'decide', supersedes: manifest.manifest_id }
}

/** The review's status once a manifest with this directive is its latest. */
export function reviewStatusAfter(directive: ReviewDirective): ReviewStatus {
  switch (directive) {
    case 'APPLY':
    case 'ADVISORY':
      return 'decided'
    case 'HAND_BACK':
      return 'handed_back'
    case 'PAUSE':
    case 'REVISE':
      return 'open'
  }
}

function manifestOfCurrentRevision(
  state: Pick<ReviewState, 'revision' | 'latest_manifest'>,
): ManifestRef | null {
  const latest = state.latest_manifest
  return latest !== null && latest.revision === state.revision ? latest : null
}

function refuse(refusal: VerdictRefusal): VerdictAcceptance {
  return { kind: 'refuse', refusal }
}
