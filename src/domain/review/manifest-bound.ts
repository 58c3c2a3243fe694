/**
 * The limits a review verdict is held to when it arrives (docs/limits.md): its findings, its canonical size, and
 * an upper bound on the review's next manifest with it among the latest verdicts of the revision. The bound
 * counts every part a verdict can put in the manifest (decide.ts, findings.ts): its item in `verdicts`, each
 * concern again in `concerns`, its blocking question or reason again as the manifest's, and each finding as if it
 * merged with no other (its normalised title and location, its fingerprint, its judge and model listed).
 */
import { breach, jcsLength, LIMITS, type LimitBreach, utf8Length } from '../limits.ts'
import { normalizeFindingText, normalizeLocation } from './findings.ts'

/** Kind, ids, times, mode, revision, verdict, directive, supersedes, the divergence, the top-level keys. */
const MANIFEST_FRAME = 2048
/** A verdict item without its texts. */
const VERDICT_FRAME = 320
/** A `concerns` item without its judge id and concern. */
const CONCERN_FRAME = 32
/** A merged finding without its title, location, judges and models. */
const FINDING_FRAME = 256

/** A verdict as submitted, as the bound reads it. */
export interface BoundVerdict {
  /**
   * `sha256(JCS(verdict))`, when the caller knows it: the verdict's weight is then remembered, so that each verdict
   * of a review is weighed once rather than again with every verdict that arrives after it.
   */
  digest?: string | undefined
  judge_id: string
  summary?: string | undefined
  concerns?: readonly string[] | undefined
  blocking_question?: string | undefined
  blocking_reason?: string | undefined
  findings?: readonly { title: string; location?: string | null | undefined }[] | undefined
}

/** The review's own part, with each judge's model. */
export interface BoundReview {
  orchestrator_id: string
  review_key: string
  subject: unknown
  implementer: unknown
  judges: readonly { judge_id: string; model: string }[]
}

/**
 * Weights of verdicts already weighed, by their judge's model and digest (a weight depends on nothing else). A
 * memo, not state: bounded, and forgetting only costs weighing again.
 */
const knownWeights = new Map<string, number>()
const KNOWN_WEIGHTS_MAX = 4096

export function verdictManifestWeight(review: BoundReview, verdict: BoundVerdict): number {
  const model = review.judges.find((j) => j.judge_id === verdict.judge_id)?.model ?? ''
  if (verdict.digest === undefined) return weigh(verdict, model)
  const key = `${verdict.digest}\u0000${model}`
  const known = knownWeights.get(key)
  if (known !== undefined) return known
  const weight = weigh(verdict, model)
  if (knownWeights.size >= KNOWN_WEIGHTS_MAX) knownWeights.delete(knownWeights.keys().next().value!)
  knownWeights.set(key, weight)
  return weight
}

function weigh(verdict: BoundVerdict, judgeModel: string): number {
  const judge = jcsLength(verdict.judge_id)
  const model = jcsLength(judgeModel)
  const blocking = jcsLength(verdict.blocking_question ?? null) + jcsLength(verdict.blocking_reason ?? null)
  let total =
    VERDICT_FRAME +
    judge +
    model +
    jcsLength(verdict.summary ?? '') +
    jcsLength(verdict.concerns ?? []) +
    2 * blocking
  for (const concern of verdict.concerns ?? []) total += CONCERN_FRAME + judge + jcsLength(concern)
  for (const finding of verdict.findings ?? []) {
    total +=
      FINDING_FRAME +
      jcsLength(normalizeFindingText(finding.title)) +
      jcsLength(normalizeLocation(finding.location)) +
      judge +
      model
  }
  return total
}

export function reviewManifestBound(review: BoundReview, verdicts: readonly BoundVerdict[]): number {
  let total =
    MANIFEST_FRAME +
    jcsLength(review.orchestrator_id) +
    jcsLength(review.review_key) +
    jcsLength(review.subject) +
    jcsLength(review.implementer) +
    jcsLength(review.judges)
  for (const verdict of verdicts) total += verdictManifestWeight(review, verdict)
  return total
}

/**
 * The first limit a verdict passes: its findings, its canonical size, or — with it in place of its judge's latest
 * verdict among `others` — the bound on the review's next manifest.
 */
export function verdictLimitBreach(
  review: BoundReview,
  verdict: BoundVerdict,
  canonicalText: string,
  others: readonly BoundVerdict[],
): LimitBreach | undefined {
  const findings = verdict.findings?.length ?? 0
  if (findings > LIMITS.findings_per_verdict) return breach('findings_per_verdict', findings, 'body/findings')
  const bytes = utf8Length(canonicalText)
  if (bytes > LIMITS.verdict_bytes) return breach('verdict_bytes', bytes)
  const latest = [...others.filter((other) => other.judge_id !== verdict.judge_id), verdict]
  if (reviewManifestBound(review, latest) > LIMITS.manifest_bytes) return breach('manifest_bytes')
  return undefined
}
