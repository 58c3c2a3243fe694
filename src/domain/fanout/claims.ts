/*
 * What a fan-out's reconciliation reads (src/domain/fanout/reconcile.ts): the fan-out's facts, subtasks and policy,
 * and the latest result of each subtask, its claims as the worker submitted them.
 */

import type { JsonValue } from '../shared/canonical-json.ts'
import type { ReportStatus } from '../status-report.ts'
import type { SubtaskOwnership } from './decomposition.ts'
import type { FanoutPolicy } from './vocabulary.ts'

/** Qualifiers narrow what a claim is about: `{"applies_to": "new_logos"}`. */
export type Qualifiers = { [key: string]: string | number | boolean }

/** A source as the worker cited it. */
export interface ClaimSource {
  uri: string
  excerpt?: string | null
  /** `sha256:<hex>` of the bytes the worker read; when given, it alone identifies the source. */
  content_digest?: string | null
  /** RFC 3339 time the worker saw the source. */
  observed_at?: string | null
}

/** A claim as the worker submitted it (absent members mean null / `{}`). */
export interface SubmittedClaim {
  fact: string
  value: JsonValue
  effective_date?: string | null
  qualifiers?: Qualifiers
  confidence?: number | null
  sources: ClaimSource[]
}

export interface FanoutDefinition {
  facts: readonly string[]
  subtasks: readonly SubtaskOwnership[]
  /** With defaults filled in. */
  policy: FanoutPolicy
}

/** The latest result of one subtask, as stored. */
export interface SubtaskResult {
  subtask_id: string
  revision: number
  status: ReportStatus
  /** Received after the deadline. */
  late: boolean
  received_at: string
  result_digest: string
  /** As submitted, in submitted order (`claim_ref` indexes this list); `[]` when none. */
  claims: readonly SubmittedClaim[]
  blocking_question: string | null
  blocking_reason: string | null
  /** `[]` unless the status is DONE_WITH_CONCERNS. */
  concerns: readonly string[]
}

export interface ReconcileInput {
  fanout: FanoutDefinition
  /** At most one per subtask, in any order. */
  results: readonly SubtaskResult[]
  /** True when the fan-out has a deadline and it has passed (the caller owns the clock). */
  deadline_passed: boolean
  /** The owner asked to stop waiting (`{"close": true}`): missing subtasks count as missing now. */
  closed: boolean
}
