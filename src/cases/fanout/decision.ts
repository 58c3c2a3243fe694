import type { FanoutDefinition } from '../../domain/fanout/claims.ts'
import { reconcile } from '../../domain/fanout/reconcile.ts'
import type { JsonValue } from '../../domain/shared/canonical-json.ts'
import type { CaseDecision } from '../../engine/case-kind.ts'
import type { FanoutInput, FanoutPending, ReconciliationManifestContent } from './kind.ts'
import type { FanoutRow } from './repository.ts'

/**
 * A fan-out's decision (its CaseKind's `decide`): the pure reconciliation of its latest results, as the manifest
 * content the engine signs. Free of I/O and of the kind's other modules, so that a worker thread can run it for
 * large fan-outs (src/engine/decision-worker.ts).
 */
export function decideFanout(
  fanout: FanoutRow,
  input: FanoutInput,
): CaseDecision<ReconciliationManifestContent, FanoutPending> {
  const reconciliation = reconcile({ fanout: definitionOf(fanout), ...input })
  if (reconciliation.kind === 'pending') {
    return { kind: 'pending', pending: { missing_subtasks: reconciliation.missing_subtasks } }
  }
  const { verdict, directive, final, coverage, facts, reasons } = reconciliation
  return {
    kind: 'decided',
    decided: {
      content: {
        fanout_id: fanout.id,
        orchestrator_id: fanout.orchestrator_id,
        fanout_key: fanout.fanout_key,
        verdict,
        directive,
        policy: fanout.policy,
        policy_digest: fanout.policy_digest,
        coverage,
        facts,
        reasons,
        resolution: null,
      },
      final,
      escalation: directive === 'HALT' ? { data: { reasons: reasons as unknown as JsonValue } } : null,
    },
  }
}

/** Fan-outs with at least this many claims in their latest results are decided in a worker thread. */
export const OFFLOAD_MIN_CLAIMS = 1000

/** The claims of a fan-out's latest results. */
export function claimCount(input: FanoutInput): number {
  let count = 0
  for (const result of input.results) count += result.claims.length
  return count
}

function definitionOf(fanout: FanoutRow): FanoutDefinition {
  return { facts: fanout.facts, subtasks: fanout.subtasks, policy: fanout.policy }
}
