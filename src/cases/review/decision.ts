import { decideReview, type RecordedVerdict } from '../../domain/review/decide.ts'
import type { Finding } from '../../domain/review/findings.ts'
import type { CaseDecision } from '../../engine/case-kind.ts'
import type { ReviewInput, ReviewManifestContent, ReviewPending } from './kind.ts'
import type { ReviewRow, ReviewViewRow, VerdictRow } from './repository.ts'

/**
 * A review's decision (its CaseKind's `decide`): the pure decision over the panel's latest verdicts, as the
 * manifest content the engine signs. Free of I/O and of the kind's other modules, so that a worker thread can
 * run it for large panels (src/engine/decision-worker.ts).
 */
export function decideReviewCase(
  review: ReviewRow,
  input: ReviewInput,
): CaseDecision<ReviewManifestContent, ReviewPending> {
  const decision = decideReview(
    { mode: review.mode, revision: review.revision, judges: review.judges },
    input.verdicts.map(toRecordedVerdict),
  )
  if (decision.kind === 'pending') {
    return { kind: 'pending', pending: { missing_judges: decision.missing_judges } }
  }
  return {
    kind: 'decided',
    decided: {
      content: {
        review_id: review.id,
        orchestrator_id: review.orchestrator_id,
        review_key: review.review_key,
        mode: review.mode,
        revision: review.revision,
        subject: review.subject,
        implementer: review.implementer,
        judges: review.judges,
        verdict: decision.verdict,
        directive: decision.directive,
        verdicts: decision.verdicts,
        concerns: decision.concerns,
        blocking_question: decision.blocking_question,
        blocking_reason: decision.blocking_reason,
        divergence: decision.divergence,
        findings: decision.findings,
      },
      final: decision.final,
      escalation: null,
    },
  }
}

/** Reviews whose latest verdicts carry at least this many findings are decided in a worker thread. */
export const OFFLOAD_MIN_FINDINGS = 1000

/** The findings of a review's latest verdicts. */
export function findingCount(input: ReviewInput): number {
  let count = 0
  for (const row of input.verdicts) {
    const findings = (row.body as { findings?: unknown }).findings
    if (Array.isArray(findings)) count += findings.length
  }
  return count
}

/**
 * The fields of a stored verdict body the decision reads (the body passed the status report's schema when it
 * came).
 */
interface StoredVerdictBody {
  summary: string
  concerns?: string[]
  blocking_question?: string
  blocking_reason?: string
  findings?: Finding[]
}

/** A stored verdict as the decision reads it. */
export function toRecordedVerdict(row: VerdictRow): RecordedVerdict {
  return { ...verdictFields(row), received_at: row.received_at.toISOString() }
}

/** A stored verdict's fields as the decision reads them, but for its arrival time. */
export function verdictFields(row: ReviewViewRow['verdicts'][number]): RecordedVerdict {
  const body = row.body as unknown as StoredVerdictBody
  return {
    judge_id: row.judge_id,
    status: row.status,
    summary: body.summary,
    concerns: body.concerns ?? null,
    blocking_question: body.blocking_question ?? null,
    blocking_reason: body.blocking_reason ?? null,
    findings: body.findings ?? null,
    verdict_digest: row.verdict_digest,
  }
}
