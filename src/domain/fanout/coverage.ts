/*
 * A reconciled fan-out's coverage of its subtasks, the reasons that hold it up, and the verdict and directive they
 * lead to.
 */

import { compareCodeUnits } from '../shared/order.ts'
import type { ReconcileInput, SubtaskResult } from './claims.ts'
import { checkDecomposition } from './decomposition.ts'
import type {
  Coverage,
  FactEntry,
  Reason,
  ReconciliationDecision,
  SubtaskCoverage,
} from './reconciliation.ts'
import type { FanoutPolicy } from './vocabulary.ts'

/** `items` sorted by subtask id, in place. */
export function bySubtaskId<T extends { subtask_id: string }>(items: T[]): T[] {
  return items.sort((x, y) => compareCodeUnits(x.subtask_id, y.subtask_id))
}

/** Which subtasks returned, how, and which did not; the facts nobody claimed; the overlaps of the decomposition. */
export function buildCoverage(
  input: ReconcileInput,
  results: readonly SubtaskResult[],
  missing: readonly string[],
  facts: readonly FactEntry[],
): Coverage {
  const missingCoverage = missing.map(
    (subtask_id): SubtaskCoverage => ({
      subtask_id,
      status: 'MISSING',
      revision: null,
      received_at: null,
      late: false,
      result_digest: null,
    }),
  )
  const returned = results.map(
    (result): SubtaskCoverage => ({
      subtask_id: result.subtask_id,
      status: result.status,
      revision: result.revision,
      received_at: result.received_at,
      late: result.late,
      result_digest: result.result_digest,
    }),
  )
  return {
    subtasks: bySubtaskId([...returned, ...missingCoverage]),
    missing_subtasks: [...missing],
    late_subtasks: results.filter((result) => result.late).map((result) => result.subtask_id),
    needs_context: results
      .filter((result) => result.status === 'NEEDS_CONTEXT')
      .map((result) => ({ subtask_id: result.subtask_id, blocking_question: result.blocking_question })),
    blocked: results
      .filter((result) => result.status === 'BLOCKED')
      .map((result) => ({ subtask_id: result.subtask_id, blocking_reason: result.blocking_reason })),
    concerns: results
      .filter((result) => result.concerns.length > 0)
      .map((result) => ({ subtask_id: result.subtask_id, concerns: [...result.concerns] })),
    uncovered_facts: facts.filter((fact) => fact.status === 'unclaimed').map((fact) => fact.fact),
    overlaps: checkDecomposition(input.fanout.facts, input.fanout.subtasks).overlaps,
  }
}

/** Why the verdict is what it is: each subtask and fact that holds the fan-out up, sorted. */
export function buildReasons(coverage: Coverage, facts: readonly FactEntry[]): Reason[] {
  const reasons: Reason[] = [
    ...coverage.needs_context.map(({ subtask_id }) => ({
      code: 'needs_context' as const,
      subject: subtask_id,
    })),
    ...coverage.blocked.map(({ subtask_id }) => ({ code: 'blocked' as const, subject: subtask_id })),
    ...coverage.missing_subtasks.map((subject) => ({ code: 'missing_subtask' as const, subject })),
    ...coverage.uncovered_facts.map((subject) => ({ code: 'uncovered_fact' as const, subject })),
    ...facts
      .filter((fact) => fact.status === 'contested')
      .map((fact) => ({ code: 'contested_fact' as const, subject: fact.fact })),
  ]
  return reasons.sort((x, y) => compareCodeUnits(x.code, y.code) || compareCodeUnits(x.subject, y.subject))
}

type Outcome = Pick<ReconciliationDecision, 'verdict' | 'directive' | 'final'>

/**
 * A worker waiting for an answer comes first: answering it may change everything else. Then, unless
 * the policy says to proceed regardless, a hole in coverage halts; then any contested fact halts.
 */
export function decideOutcome(
  policy: FanoutPolicy,
  coverage: Coverage,
  facts: readonly FactEntry[],
): Outcome {
  if (coverage.needs_context.length > 0)
    return { verdict: 'INCOMPLETE', directive: 'REEVALUATE', final: false }
  const incomplete =
    coverage.blocked.length > 0 || coverage.missing_subtasks.length > 0 || coverage.uncovered_facts.length > 0
  if (policy.on_incomplete === 'halt' && incomplete) {
    return { verdict: 'INCOMPLETE', directive: 'HALT', final: true }
  }
  if (facts.some((fact) => fact.status === 'contested')) {
    return { verdict: 'CONTESTED', directive: 'HALT', final: true }
  }
  return { verdict: 'RECONCILED', directive: 'PROCEED', final: true }
}
