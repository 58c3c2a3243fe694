/**
 * The review decision as a pure function: the panel and the verdicts recorded for the current revision in,
 * either "still waiting for these judges" or the decision a review manifest reports out. No clock, no
 * database; the result never depends on the order in which verdicts arrived.
 *
 * Routing by mode (strictness: BLOCKED > NEEDS_CONTEXT > DONE_WITH_CONCERNS > DONE):
 * - do_and_judge: the judge's status.
 * - two_stage: a stage-1 BLOCKED or NEEDS_CONTEXT decides at once (quality-reviewing a change that fails its
 *   spec is wasted work); otherwise both stages are needed and the stricter wins.
 * - debate: both judges are needed and the stricter wins; a meta-judge's verdict, when recorded, can make the
 *   result stricter, never looser, and is never waited for.
 * - council: every judge is needed; the verdict is ADVISORY and carries the findings union.
 */
import { type ReportStatus, stricterStatus } from '../status-report.ts'
import { type Finding, type MergedFinding, mergeFindings } from './findings.ts'
import type { SubmittedJudge } from './panel.ts'
import {
  type DebateRole,
  isFinalForRevision,
  type JudgeStage,
  MAX_REVISION,
  type ReviewDirective,
  type ReviewMode,
  type ReviewVerdict,
} from './vocabulary.ts'

/** What the decision needs of a review. `judges` are the panel as stored (absent stage/role may be null). */
export interface ReviewForDecision {
  mode: ReviewMode
  /** The current revision: 0 at creation, at most {@link MAX_REVISION}. */
  revision: number
  judges: readonly SubmittedJudge[]
}

/** A judge's verdict recorded for the current revision (the latest one, when a NEEDS_CONTEXT was replaced). */
export interface RecordedVerdict {
  judge_id: string
  status: ReportStatus
  summary: string
  concerns?: readonly string[] | null
  blocking_question?: string | null
  blocking_reason?: string | null
  /** Council verdicts only; absent or empty elsewhere. */
  findings?: readonly Finding[] | null
  /** `sha256(JCS(body as submitted))`. */
  verdict_digest: string
  /** Kept by the caller for its records; the decision never reads it (arrival order must not matter). */
  received_at?: string
}

/** One verdict as the manifest lists it. */
export interface ManifestVerdictItem {
  judge_id: string
  model: string
  stage: JudgeStage | null
  role: DebateRole | null
  status: ReportStatus
  summary: string
  concerns: string[]
  blocking_question: string | null
  blocking_reason: string | null
  verdict_digest: string
}

export interface ReviewConcern {
  judge_id: string
  concern: string
}

/** The two debate judges when their statuses differ; `a` < `b` by judge_id. Never the meta-judge. */
export interface ReviewDivergence {
  a: string
  b: string
  a_status: ReportStatus
  b_status: ReportStatus
}

export interface PendingReview {
  kind: 'pending'
  /** The verdicts needed now, sorted by judge_id. */
  missing_judges: string[]
}

export interface ReviewDecided {
  kind: 'decided'
  verdict: ReviewVerdict
  directive: ReviewDirective
  /** Final for its revision: every directive but PAUSE. Whether it also ends the review: `isFinalForReview`. */
  final: boolean
  /** Every recorded verdict of the revision, meta included, sorted by judge_id. */
  verdicts: ManifestVerdictItem[]
  /** Every concern of those verdicts, by judge_id, each judge's in the order it gave them. */
  concerns: ReviewConcern[]
  /** From the deciding verdict when the directive is PAUSE, REVISE or HAND_BACK; else null. */
  blocking_question: string | null
  blocking_reason: string | null
  divergence: ReviewDivergence | null
  /** The findings union in council; `[]` in every other mode. */
  findings: MergedFinding[]
}

export type ReviewDecision = PendingReview | ReviewDecided

/**
 * The directive for a panel verdict. A council only advises. BLOCKED asks for a revision while the ceiling
 * allows one; at the ceiling the change is handed back so the revise loop always ends.
 */
export function directiveFor(mode: ReviewMode, status: ReportStatus, revision: number): ReviewDirective {
  if (mode === 'council') return 'ADVISORY'
  switch (status) {
    case 'DONE':
    case 'DONE_WITH_CONCERNS':
      return 'APPLY'
    case 'NEEDS_CONTEXT':
      return 'PAUSE'
    case 'BLOCKED':
      return revision < MAX_REVISION ? 'REVISE' : 'HAND_BACK'
  }
}

/** What a mode's routing read: the statuses that counted and the verdict they give. */
interface Routed {
  verdict: ReviewVerdict
  /** The verdicts the routing used; the deciding verdict is chosen among them. */
  counted: RecordedVerdict[]
  divergence: ReviewDivergence | null
}

/** Decides the current revision of a review, or names the judges still awaited. */
export function decideReview(
  review: ReviewForDecision,
  recorded: readonly RecordedVerdict[],
): ReviewDecision {
  const verdicts = indexVerdicts(review.judges, recorded)
  const routed = route(review, verdicts)
  if ('missing' in routed) return { kind: 'pending', missing_judges: [...routed.missing].sort() }

  const sorted = [...recorded].sort(byJudgeId)
  const directive =
    routed.verdict === 'ADVISORY' ? 'ADVISORY' : directiveFor(review.mode, routed.verdict, review.revision)
  const blocking = directive === 'PAUSE' || directive === 'REVISE' || directive === 'HAND_BACK'
  // The deciding verdict: the first by judge_id among those that carry the verdict the panel reached.
  const deciding = blocking
    ? [...routed.counted].sort(byJudgeId).find((v) => v.status === routed.verdict)
    : null
  const judgeById = new Map(review.judges.map((judge) => [judge.judge_id, judge]))

  return {
    kind: 'decided',
    verdict: routed.verdict,
    directive,
    final: isFinalForRevision(directive),
    verdicts: sorted.map((v) => manifestItem(review.mode, judgeById.get(v.judge_id)!, v)),
    concerns: sorted.flatMap((v) => (v.concerns ?? []).map((concern) => ({ judge_id: v.judge_id, concern }))),
    blocking_question: deciding?.blocking_question ?? null,
    blocking_reason: deciding?.blocking_reason ?? null,
    divergence: routed.divergence,
    findings:
      review.mode === 'council'
        ? mergeFindings(
            sorted.map((v) => ({ judge_id: v.judge_id, findings: v.findings ?? [] })),
            review.judges,
          )
        : [],
  }
}

/** The mode's routing: the judges still awaited, or the verdict reached. */
function route(
  review: ReviewForDecision,
  verdicts: ReadonlyMap<string, RecordedVerdict>,
): Routed | { missing: string[] } {
  const { judges } = review
  const missingAmong = (awaited: readonly SubmittedJudge[]) =>
    awaited.filter((judge) => !verdicts.has(judge.judge_id)).map((judge) => judge.judge_id)

  switch (review.mode) {
    case 'do_and_judge': {
      const only = single(judges, () => true, 'the do_and_judge judge')
      const verdict = verdicts.get(only.judge_id)
      if (verdict === undefined) return { missing: [only.judge_id] }
      return { verdict: verdict.status, counted: [verdict], divergence: null }
    }
    case 'two_stage': {
      const specJudge = single(judges, (judge) => judge.stage === 1, 'the stage-1 judge')
      const qualityJudge = single(judges, (judge) => judge.stage === 2, 'the stage-2 judge')
      const spec = verdicts.get(specJudge.judge_id)
      if (spec === undefined) return { missing: [specJudge.judge_id] }
      if (spec.status === 'BLOCKED' || spec.status === 'NEEDS_CONTEXT') {
        return { verdict: spec.status, counted: [spec], divergence: null }
      }
      const quality = verdicts.get(qualityJudge.judge_id)
      if (quality === undefined) return { missing: [qualityJudge.judge_id] }
      return {
        verdict: stricterStatus(spec.status, quality.status),
        counted: [spec, quality],
        divergence: null,
      }
    }
    case 'debate': {
      const deciding = judges.filter((judge) => judge.role === 'judge')
      if (deciding.length !== 2)
        throw new RangeError('a debate panel needs exactly two judges with role "judge"')
      const missing = missingAmong(deciding)
      if (missing.length > 0) return { missing }
      const [a, b] = deciding.map((judge) => verdicts.get(judge.judge_id)!).sort(byJudgeId) as [
        RecordedVerdict,
        RecordedVerdict,
      ]
      const metaJudge = judges.find((judge) => judge.role === 'meta')
      const meta = metaJudge === undefined ? undefined : verdicts.get(metaJudge.judge_id)
      const counted = meta === undefined ? [a, b] : [a, b, meta]
      const verdict = counted.map((v) => v.status).reduce(stricterStatus)
      const divergence =
        a.status === b.status
          ? null
          : { a: a.judge_id, b: b.judge_id, a_status: a.status, b_status: b.status }
      return { verdict, counted, divergence }
    }
    case 'council': {
      if (judges.length === 0) throw new RangeError('a council panel needs judges')
      const missing = missingAmong(judges)
      if (missing.length > 0) return { missing }
      return { verdict: 'ADVISORY', counted: [...verdicts.values()], divergence: null }
    }
  }
}

function single(
  judges: readonly SubmittedJudge[],
  matches: (judge: SubmittedJudge) => boolean,
  what: string,
): SubmittedJudge {
  const found = judges.filter(matches)
  if (found.length !== 1) throw new RangeError(`the panel needs exactly one judge as ${what}`)
  return found[0]!
}

/**
 * Verdicts by judge_id. One verdict per judge of the panel is the caller's contract; silently picking one of
 * two, or counting a stranger's, would make the decision depend on how the caller listed them.
 */
function indexVerdicts(
  judges: readonly SubmittedJudge[],
  recorded: readonly RecordedVerdict[],
): Map<string, RecordedVerdict> {
  const panel = new Set(judges.map((judge) => judge.judge_id))
  const byJudge = new Map<string, RecordedVerdict>()
  for (const verdict of recorded) {
    if (!panel.has(verdict.judge_id)) {
      throw new RangeError(`verdict from ${JSON.stringify(verdict.judge_id)}, who is not on the panel`)
    }
    if (byJudge.has(verdict.judge_id)) {
      throw new RangeError(`two verdicts from judge ${JSON.stringify(verdict.judge_id)} in one revision`)
    }
    byJudge.set(verdict.judge_id, verdict)
  }
  return byJudge
}

/** A recorded verdict as manifests (and a review's `verdicts`) list it: `stage`/`role` null outside their modes. */
export function manifestItem(
  mode: ReviewMode,
  judge: SubmittedJudge,
  verdict: RecordedVerdict,
): ManifestVerdictItem {
  return {
    judge_id: verdict.judge_id,
    model: judge.model,
    stage: mode === 'two_stage' ? (judge.stage ?? null) : null,
    role: mode === 'debate' ? (judge.role ?? null) : null,
    status: verdict.status,
    summary: verdict.summary,
    concerns: [...(verdict.concerns ?? [])],
    blocking_question: verdict.blocking_question ?? null,
    blocking_reason: verdict.blocking_reason ?? null,
    verdict_digest: verdict.verdict_digest,
  }
}

function byJudgeId(x: { judge_id: string }, y: { judge_id: string }): number {
  return x.judge_id < y.judge_id ? -1 : x.judge_id > y.judge_id ? 1 : 0
}
