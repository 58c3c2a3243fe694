/**
 * The words of a review: how its judges are arranged (mode), what a judge or the panel can say (verdict),
 * what the orchestrator must do next (directive), and where the review stands (status). Schemas, tables and
 * the decision all read these tuples, so a new word is added in one place.
 */
import { REPORT_STATUSES } from '../status-report.ts'

/**
 * - `do_and_judge`: one judge; its status is the verdict.
 * - `two_stage`: a spec-compliance judge (stage 1), then a code-quality judge (stage 2).
 * - `debate`: two judges, the stricter wins; an optional meta-judge can only make it stricter.
 * - `council`: 2–10 judges on distinct models report findings; advisory, it never gates.
 */
export const REVIEW_MODES = ['do_and_judge', 'two_stage', 'debate', 'council'] as const
export type ReviewMode = (typeof REVIEW_MODES)[number]

/** `stage` of a two_stage judge: 1 = spec compliance, 2 = code quality. */
export const JUDGE_STAGES = [1, 2] as const
export type JudgeStage = (typeof JUDGE_STAGES)[number]

/** `role` of a debate judge: the two `judge`s decide, a `meta` judge may only make the result stricter. */
export const DEBATE_ROLES = ['judge', 'meta'] as const
export type DebateRole = (typeof DEBATE_ROLES)[number]

/** What a review manifest can say: one of the envelope statuses, or `ADVISORY` for a council. */
export const REVIEW_VERDICTS = [...REPORT_STATUSES, 'ADVISORY'] as const
export type ReviewVerdict = (typeof REVIEW_VERDICTS)[number]

/**
 * What the orchestrator does with the change:
 * - `APPLY`: apply it (acting on any concerns listed).
 * - `PAUSE`: a judge needs an answer; answer it, let the judge return again, decide again.
 * - `REVISE`: the implementer revises; the next revision is judged afresh.
 * - `HAND_BACK`: the revision ceiling is reached; the change goes back to the orchestrator's user.
 * - `ADVISORY`: a council's findings, for information; nothing is gated on them.
 */
export const REVIEW_DIRECTIVES = ['APPLY', 'PAUSE', 'REVISE', 'HAND_BACK', 'ADVISORY'] as const
export type ReviewDirective = (typeof REVIEW_DIRECTIVES)[number]

/** `open` until a manifest closes the review: `decided` (APPLY, ADVISORY) or `handed_back` (HAND_BACK). */
export const REVIEW_STATUSES = ['open', 'decided', 'handed_back'] as const
export type ReviewStatus = (typeof REVIEW_STATUSES)[number]

/**
 * Severity of a council finding, listed from least to most severe so that the index is the rank
 * (critical > high > medium > low).
 */
export const FINDING_SEVERITIES = ['low', 'medium', 'high', 'critical'] as const
export type FindingSeverity = (typeof FINDING_SEVERITIES)[number]

/** Rank in the severity order: higher is more severe. */
export function severityRank(severity: FindingSeverity): number {
  return FINDING_SEVERITIES.indexOf(severity)
}

/**
 * The revision ceiling. A review starts at revision 0 and may be revised twice (revisions 1 and 2); a change
 * still blocked at revision 2 is handed back instead of revised again, so the loop always ends.
 */
export const MAX_REVISION = 2

/** No more verdicts are taken for the revision once its manifest carries one of these (all but PAUSE). */
export function isFinalForRevision(directive: ReviewDirective): boolean {
  return directive !== 'PAUSE'
}

/** Audit records only reviews write (the engine's own kinds, `manifest.issued` among them, are shared). */
export const REVIEW_AUDIT_KINDS = ['review.created', 'verdict.recorded', 'revision.recorded'] as const

/** The review is over once a manifest carries one of these; REVISE only ends its revision. */
export function isFinalForReview(directive: ReviewDirective): boolean {
  return directive === 'APPLY' || directive === 'HAND_BACK' || directive === 'ADVISORY'
}
