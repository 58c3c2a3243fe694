/*
 * What a fan-out's reconciliation decides (src/domain/fanout/reconcile.ts): the content of its manifest, every fact
 * with its positions, claims, conflicts and echoes, the coverage of the subtasks and the reasons for the verdict.
 */

import type { JsonValue } from '../shared/canonical-json.ts'
import type { JsonDifference } from '../shared/json-diff.ts'
import type { ClaimSource, Qualifiers } from './claims.ts'
import type { Overlap } from './decomposition.ts'
import type {
  AnswerRule,
  ContestedReason,
  CoverageStatus,
  FactStatus,
  FanoutDirective,
  FanoutVerdict,
  PolicyRule,
  ReasonCode,
} from './vocabulary.ts'

/** What a claim asserts; JCS-equal positions are one position. Also the shape of every answer. */
export interface Position {
  value: JsonValue
  effective_date: string | null
  qualifiers: Qualifiers
}

export interface PositionEntry extends Position {
  /** `p1`, `p2`, … in the order of `JCS(position)`. */
  position_id: string
  /** Claim refs, sorted. */
  claims: string[]
  /** Source clusters among this position's claims. */
  independent_sources: number
  /** The rule that decided against this position; null unless it lost. */
  lost_by: PolicyRule | null
}

export interface ClaimEntry {
  /** `<subtask_id>#<index in that result's claims>`. */
  claim_ref: string
  subtask_id: string
  revision: number
  position_id: string
  confidence: number | null
  /** As submitted. */
  sources: ClaimSource[]
  /** The claim's subtask does not own the fact; it is counted like any other claim. */
  out_of_scope: boolean
}

/** One of the position fields two positions can differ in. */
export type PositionField = 'effective_date' | 'qualifiers' | 'value'

/**
 * A qualifier that differs between two positions: `a`/`b` are its values on each side; a side
 * without the key omits its member, which makes the entry a carve-out.
 */
export type QualifierDifference = JsonDifference

export interface Conflict {
  /** The lower-numbered position. */
  a: string
  b: string
  /** Alphabetical. */
  differs: PositionField[]
  /** Sorted by pointer. */
  qualifier_differences: QualifierDifference[]
}

/** A source cited by claims of two or more subtasks. */
export interface Echo {
  /** The source identity: content digest or normalised URI. */
  source: string
  /** Every claim citing it, sorted. */
  claims: string[]
}

/** Under `keep_all`, one qualifier set's own reconciliation. */
export interface Variant {
  qualifiers: Qualifiers
  status: 'agreed' | 'resolved' | 'contested'
  answer: Position | null
  rule: PolicyRule | null
  reason: ContestedReason | null
}

export interface FactEntry {
  fact: string
  status: FactStatus
  answer: Position | null
  /** Sorted by `JCS(qualifiers)`; `[]` unless positions were reconciled per qualifier set. */
  variants: Variant[]
  rule: AnswerRule | null
  reason: ContestedReason | null
  positions: PositionEntry[]
  claims: ClaimEntry[]
  conflicts: Conflict[]
  echoes: Echo[]
}

export interface SubtaskCoverage {
  subtask_id: string
  status: CoverageStatus
  revision: number | null
  received_at: string | null
  late: boolean
  result_digest: string | null
}

export interface Coverage {
  subtasks: SubtaskCoverage[]
  missing_subtasks: string[]
  late_subtasks: string[]
  needs_context: { subtask_id: string; blocking_question: string | null }[]
  blocked: { subtask_id: string; blocking_reason: string | null }[]
  concerns: { subtask_id: string; concerns: string[] }[]
  /** Facts without any claim (whatever the decomposition said). */
  uncovered_facts: string[]
  /** Facts owned by two or more subtasks, as checked at creation. */
  overlaps: Overlap[]
}

export interface Reason {
  code: ReasonCode
  /** A subtask id (needs_context, blocked, missing_subtask) or a fact. */
  subject: string
}

/** The decided content of a reconciliation manifest. */
export interface ReconciliationDecision {
  kind: 'decided'
  verdict: Exclude<FanoutVerdict, 'HUMAN_RESOLVED'>
  directive: FanoutDirective
  /** False only for REEVALUATE: a worker is waiting for an answer and will return again. */
  final: boolean
  coverage: Coverage
  facts: FactEntry[]
  reasons: Reason[]
}

export type Reconciliation = { kind: 'pending'; missing_subtasks: string[] } | ReconciliationDecision
