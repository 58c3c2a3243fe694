import { type DecidedDecision, type DecisionInput, decide } from '../../domain/outcome/decision.ts'
import { toManifestInterpretation } from '../../domain/outcome/interpretation.ts'
import type { CaseDecision } from '../../engine/case-kind.ts'
import type { GroundTruthRecord } from '../../probes/probe-runner.ts'
import type { OutcomeManifestContent, OutcomePending } from './kind.ts'
import type { OutcomeRow } from './repository.ts'

/**
 * An outcome's decision (its CaseKind's `decide`): the pure decision procedure on the latest interpretations, as
 * the manifest content the engine signs. Free of I/O and of the kind's other modules, so that a worker thread can
 * run it for large outcomes (src/engine/decision-worker.ts).
 */
export function decideOutcomeCase(
  outcome: OutcomeRow,
  input: DecisionInput,
  groundTruth: GroundTruthRecord | null,
): CaseDecision<OutcomeManifestContent, OutcomePending> {
  const decision = decide(input, groundTruth && { result: groundTruth.result })
  switch (decision.kind) {
    case 'pending':
      return { kind: 'pending', pending: { missing_orchestrators: decision.missing_orchestrators } }
    case 'nothing_to_decide':
      return {
        kind: 'nothing_to_decide',
        detail: 'no orchestrator has interpreted this outcome and none is expected',
      }
    case 'needs_ground_truth':
      return decision
    case 'decided':
      return {
        kind: 'decided',
        decided: {
          content: decidedContent(outcome, decision, groundTruth),
          final: decision.final,
          escalation:
            decision.directive === 'HALT'
              ? {
                  data: {
                    receipt_digest: decision.interpretation_divergence_receipt?.receipt_digest ?? null,
                  },
                }
              : null,
        },
      }
  }
}

/**
 * From this many evidence items listed by the interpretations together (each lists the item hashes of the version
 * it judged), an outcome is decided in a worker thread: its receipt compares every pair of versions item by item.
 */
export const OFFLOAD_MIN_EVIDENCE_ITEMS = 2000

/** The evidence items the latest interpretations list, together. */
export function listedEvidenceItems(input: DecisionInput): number {
  let count = 0
  for (const interpretation of input.interpretations) count += interpretation.evidence_item_hashes.length
  return count
}

function decidedContent(
  outcome: OutcomeRow,
  decision: DecidedDecision,
  groundTruth: GroundTruthRecord | null,
): OutcomeManifestContent {
  return {
    outcome_id: outcome.id,
    subagent_id: outcome.subagent_id,
    run_id: outcome.run_id,
    verdict: decision.verdict,
    directive: decision.directive,
    resolved_outcome: decision.resolved_outcome,
    subagent_outcome_evidence_hash: outcome.evidence_hash,
    interpretations: decision.interpretations.map(toManifestInterpretation),
    interpretation_divergence_receipt: decision.interpretation_divergence_receipt,
    ground_truth_arbiter_predicate: groundTruth,
    action_owner: decision.action_owner,
    missing_orchestrators: decision.missing_orchestrators,
    resolution: null,
  }
}
