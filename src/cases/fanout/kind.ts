import type { Queryable } from '../../db/pool.ts'
import { splitRowVersion } from '../../db/row-version.ts'
import { queryFirst, queryRows, runStatement } from '../../db/statement.ts'
import type { SubmittedClaim, SubtaskResult } from '../../domain/fanout/claims.ts'
import type { Coverage, FactEntry, Reason } from '../../domain/fanout/reconciliation.ts'
import { applyResolution, type FactResolution, resolutionErrors } from '../../domain/fanout/resolution.ts'
import { type FanoutEvent, transitionFanout } from '../../domain/fanout/transitions.ts'
import type {
  FanoutDirective,
  FanoutPolicy,
  FanoutStatus,
  FanoutVerdict,
} from '../../domain/fanout/vocabulary.ts'
import { hashJson, type JsonValue } from '../../domain/shared/canonical-json.ts'
import { compareCodeUnits } from '../../domain/shared/order.ts'
import type { CaseKind, StoredManifest } from '../../engine/case-kind.ts'
import { moduleBeside } from '../../engine/decision-workers.ts'
import { AppError } from '../../errors.ts'
import { claimCount, decideFanout, OFFLOAD_MIN_CLAIMS } from './decision.ts'
import {
  type FanoutRow,
  fanoutById,
  fanoutStateUpdate,
  fanoutStateUpdateIf,
  fanoutWithVersion,
  latestResults,
  type ResultParts,
  type ResultRow,
} from './repository.ts'

/** The fields of a reconciliation manifest the fan-out kind fills (the engine adds kind, id, time, supersedes). */
export interface ReconciliationManifestContent {
  fanout_id: string
  orchestrator_id: string
  fanout_key: string
  verdict: FanoutVerdict
  directive: FanoutDirective
  /** With defaults filled in. */
  policy: FanoutPolicy
  policy_digest: string
  coverage: Coverage
  /** One entry per fan-out fact, sorted. */
  facts: FactEntry[]
  reasons: Reason[]
  resolution: { by: string; rationale: string } | null
}

/** The signed reconciliation manifest. */
export interface ReconciliationManifest extends ReconciliationManifestContent {
  kind: 'reconciliation'
  manifest_id: string
  issued_at: string
  supersedes: string | null
}

/** What reconciliation reads besides the fan-out itself. */
export interface FanoutInput {
  /** The latest result of each subtask that returned. */
  results: SubtaskResult[]
  /** The fan-out has a deadline and it has passed. */
  deadline_passed: boolean
  /** The owner stopped waiting for missing subtasks, now or before. */
  closed: boolean
}

/** What a 202 answer names while subtasks are still out. */
export interface FanoutPending {
  missing_subtasks: string[]
}

/** What the caller of `POST …/reconcile` may ask: `{"close": true}` stops waiting for missing subtasks. */
export interface ReconcileRequest {
  close: boolean
}

/** What a human answers to a HALTed fan-out: every contested fact, and why. */
export interface FanoutResolution {
  facts: FactResolution[]
  rationale: string
}

const text = (value: JsonValue | undefined): string | null => (typeof value === 'string' ? value : null)

/** A stored result as reconciliation reads it: its status report's members, its claims exactly as submitted. */
export function toSubtaskResult(row: Omit<ResultRow, keyof ResultParts>): SubtaskResult {
  const { body } = row
  return {
    subtask_id: row.subtask_id,
    revision: row.revision,
    status: row.status,
    late: row.late,
    received_at: row.received_at.toISOString(),
    result_digest: row.result_digest,
    claims: (body.claims ?? []) as unknown as SubmittedClaim[],
    blocking_question: text(body.blocking_question),
    blocking_reason: text(body.blocking_reason),
    concerns: Array.isArray(body.concerns) ? (body.concerns as string[]) : [],
  }
}

/** Subtasks without any result, sorted. */
function missingSubtasks(fanout: FanoutRow, input: FanoutInput): string[] {
  const returned = new Set(input.results.map((result) => result.subtask_id))
  return fanout.subtasks
    .map((subtask) => subtask.subtask_id)
    .filter((id) => !returned.has(id))
    .sort(compareCodeUnits)
}

/** The fan-out's status after `event` (its transition function), or the 409 that refuses it. */
function nextStatus(fanout: FanoutRow, event: FanoutEvent): FanoutStatus {
  const next = transitionFanout(fanout.status, event)
  if (!next.ok) throw new AppError('CONFLICT', next.reason, { manifest_id: fanout.manifest_id })
  return next.status
}

/** The HALT's own fields, read back to build the manifest that resolves it. */
function haltedReconciliation(halt: StoredManifest) {
  const { directive, coverage, facts, reasons } = halt as unknown as ReconciliationManifest
  return { directive, coverage, facts, reasons }
}

/**
 * Fan-outs on the case engine: a question split into subtasks, each worker's latest return, one pure
 * reconciliation (src/domain/fanout/reconcile.ts, docs/fanouts.md), escalation to a human on HALT. A REEVALUATE
 * (a worker needs context) leaves the fan-out open; the next manifest supersedes it.
 */
export const fanoutCase: CaseKind<
  FanoutRow,
  FanoutInput,
  ReconciliationManifestContent,
  FanoutPending,
  FanoutResolution,
  ReconcileRequest
> = {
  name: 'fanout',
  manifestKind: 'reconciliation',
  noun: 'fan-out',

  lock: (tx, id) => queryFirst(tx, fanoutById(id, { lock: true })),
  find: (db, id) => queryFirst(db, fanoutById(id)),
  caseId: (fanout) => fanout.id,
  status: (fanout) => fanout.status,
  manifestId: (fanout) => fanout.manifest_id,
  round: () => 0,
  auditSubject: (fanout) => ({ orchestrator_id: fanout.orchestrator_id, data: { fanout_id: fanout.id } }),
  auditQuery: (id) => ({ data: { fanout_id: id } }),

  async loadInput(tx: Queryable, fanout, now, request) {
    const rows = await queryRows(tx, latestResults(fanout.id))
    return {
      results: rows.map(toSubtaskResult),
      deadline_passed: fanout.deadline !== null && fanout.deadline.getTime() <= now.getTime(),
      closed: fanout.closed_at !== null || request?.close === true,
    }
  },

  // What reconciliation depends on: which revision of each subtask counts, and which subtasks are missing (while
  // some are missing and nobody stopped waiting, nothing is issued, so the flags need not be part of it).
  inputsDigest: (fanout, input) =>
    hashJson({
      results: input.results
        .map((result) => [result.subtask_id, result.revision] as const)
        .sort((x, y) => compareCodeUnits(x[0], y[0])),
      missing: missingSubtasks(fanout, input),
    }),

  decide: decideFanout,
  // Thousands of claims take tenths of a second to reconcile and canonicalize: a worker thread does it.
  offload: {
    when: (_fanout, input) => claimCount(input) >= OFFLOAD_MIN_CLAIMS,
    decision: moduleBeside(import.meta.url, './decision', 'decideFanout'),
  },

  recordDecision(fanout, decision, manifestId, input) {
    const { verdict, directive } = decision.content
    const status = nextStatus(fanout, { type: 'manifest_issued', verdict, directive })
    // A close is kept: once the owner stopped waiting, later reconciliations do not wait either.
    const closedAt = fanout.closed_at ?? (input.closed ? new Date() : null)
    return fanoutStateUpdate(fanout.id, { status, manifestId, closedAt })
  },

  // Every input of a reconciliation writes the fan-out's row: a result (fanoutTouch), a decision or resolution
  // (its state); a close is written by the decision it asks for.
  optimistic: {
    read: async (db, id) => splitRowVersion(await queryFirst(db, fanoutWithVersion(id))),
    recordDecisionIf(fanout, version, decision, manifestId, input) {
      const { verdict, directive } = decision.content
      const status = nextStatus(fanout, { type: 'manifest_issued', verdict, directive })
      const closedAt = fanout.closed_at ?? (input.closed ? new Date() : null)
      return fanoutStateUpdateIf(fanout.id, version, { status, manifestId, closedAt })
    },
  },

  resolution: {
    haltManifestId(fanout) {
      nextStatus(fanout, { type: 'resolved' })
      return fanout.manifest_id!
    },

    resolve(fanout, halt, answer, by) {
      const halted = haltedReconciliation(halt)
      const errors = resolutionErrors(halted, answer.facts)
      if (errors.length > 0) {
        throw new AppError(
          'UNPROCESSABLE',
          'the resolution must answer every contested fact, and only those',
          {},
          errors.map((error) => ({ ...error, path: `body${error.path}` })),
        )
      }
      const resolved = applyResolution(halted, answer.facts)
      return {
        content: {
          fanout_id: fanout.id,
          orchestrator_id: fanout.orchestrator_id,
          fanout_key: fanout.fanout_key,
          verdict: resolved.verdict,
          directive: resolved.directive,
          policy: fanout.policy,
          policy_digest: fanout.policy_digest,
          coverage: resolved.coverage,
          facts: resolved.facts,
          reasons: resolved.reasons,
          resolution: { by, rationale: answer.rationale },
        },
        data: {
          facts: answer.facts as unknown as JsonValue,
          rationale: answer.rationale,
          supersedes: halt.manifest_id,
        },
      }
    },

    async recordResolution(tx, fanout, manifestId) {
      const status = nextStatus(fanout, { type: 'resolved' })
      await runStatement(tx, fanoutStateUpdate(fanout.id, { status, manifestId, closedAt: fanout.closed_at }))
    },
  },
}
