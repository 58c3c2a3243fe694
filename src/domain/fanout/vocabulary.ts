/**
 * The words of a fan-out: the policy a fan-out declares, the statuses a fact and a fan-out can be
 * in, and the verdicts and directives of a reconciliation manifest. Each list is a tuple (`as const`,
 * or the words of a table that gives each its meaning) so the request schemas are built from the same values
 * the decision procedure switches on.
 * See docs/fanouts.md for how they fit together.
 */
import { wordsOf } from '../shared/words.ts'
import { REPORT_STATUSES } from '../status-report.ts'

/**
 * The rules `policy.resolve` may name, each choosing one position among those still tied. This list
 * is the vocabulary, not an order: a fan-out tries the rules in the order its own `resolve` lists them.
 */
export const POLICY_RULES = [
  'corroboration',
  'source_priority',
  'most_recent_source',
  'highest_confidence',
] as const
export type PolicyRule = (typeof POLICY_RULES)[number]

/** A fact's `rule`: a policy rule, or `human` once a resolution answered it. */
export const ANSWER_RULES = [...POLICY_RULES, 'human'] as const
export type AnswerRule = (typeof ANSWER_RULES)[number]

/**
 * When positions of one fact carry different qualifiers (a carve-out such as "new logos only"):
 * `halt` contests the fact; `keep_all` reconciles each qualifier set on its own and keeps one
 * answer per set, because two statements about different populations can both be true.
 */
export const QUALIFIER_DIFFERENCE_MODES = ['halt', 'keep_all'] as const
export type QualifierDifferenceMode = (typeof QUALIFIER_DIFFERENCE_MODES)[number]

/** Whether blocked or missing subtasks and facts nobody claimed stop the fan-out (`halt`) or not. */
export const INCOMPLETE_MODES = ['halt', 'proceed'] as const
export type IncompleteMode = (typeof INCOMPLETE_MODES)[number]

/** Whether a flawed decomposition (unowned or doubly-owned facts) is reported (`warn`) or refused. */
export const DECOMPOSITION_MODES = ['warn', 'strict'] as const
export type DecompositionMode = (typeof DECOMPOSITION_MODES)[number]

/** A fan-out's declared policy, every member present (see {@link withPolicyDefaults}). */
export interface FanoutPolicy {
  resolve: PolicyRule[]
  /** URI prefixes, most trusted first; matched against normalised source URIs. */
  source_priority: string[]
  min_independent_sources: number
  on_qualifier_difference: QualifierDifferenceMode
  on_incomplete: IncompleteMode
  decomposition: DecompositionMode
}

/** A policy as a request may give it: any member may be left out. */
export type FanoutPolicyInput = { [K in keyof FanoutPolicy]?: FanoutPolicy[K] | undefined }

export const DEFAULT_POLICY: Readonly<FanoutPolicy> = Object.freeze({
  resolve: [],
  source_priority: [],
  min_independent_sources: 1,
  on_qualifier_difference: 'halt',
  on_incomplete: 'halt',
  decomposition: 'warn',
})

/**
 * The policy with every omitted member set to its default: the form that is stored, shown and
 * hashed into `policy_digest`. Returns fresh arrays, so the result never aliases the input.
 */
export function withPolicyDefaults(policy: FanoutPolicyInput = {}): FanoutPolicy {
  return {
    resolve: [...(policy.resolve ?? DEFAULT_POLICY.resolve)],
    source_priority: [...(policy.source_priority ?? DEFAULT_POLICY.source_priority)],
    min_independent_sources: policy.min_independent_sources ?? DEFAULT_POLICY.min_independent_sources,
    on_qualifier_difference: policy.on_qualifier_difference ?? DEFAULT_POLICY.on_qualifier_difference,
    on_incomplete: policy.on_incomplete ?? DEFAULT_POLICY.on_incomplete,
    decomposition: policy.decomposition ?? DEFAULT_POLICY.decomposition,
  }
}

/**
 * - `unclaimed`: no claim about the fact.
 * - `agreed`: every claim takes one position.
 * - `resolved`: a policy rule (or a human) chose among several positions.
 * - `contested`: nothing chose; see the fact's `reason`.
 * - `scoped`: positions differ only by population, and each population has its own answer.
 */
export const FACT_STATUSES = ['unclaimed', 'agreed', 'resolved', 'contested', 'scoped'] as const
export type FactStatus = (typeof FACT_STATUSES)[number]

/** Why a fact is contested. */
const CONTESTED_REASON_MEANINGS = {
  qualifier_difference: 'its positions carry different qualifiers (under `on_qualifier_difference: halt`)',
  no_rule_decides: 'no rule of the policy chose a unique position',
  insufficient_corroboration:
    "the chosen answer rests on fewer independent sources than the policy's `min_independent_sources`",
  too_many_positions:
    'more distinct positions than are compared pairwise, or more pairs than the manifest has left to list: no rule was tried',
} as const
export const CONTESTED_REASONS = wordsOf(CONTESTED_REASON_MEANINGS)
export type ContestedReason = (typeof CONTESTED_REASONS)[number]

/** Codes of a manifest's `reasons` whose subject is a subtask id. */
const SUBTASK_REASON_CODES = ['needs_context', 'blocked', 'missing_subtask'] as const
/** Codes of a manifest's `reasons` whose subject is a fact. */
const FACT_REASON_CODES = ['uncovered_fact', 'contested_fact'] as const
export const REASON_CODES = [...SUBTASK_REASON_CODES, ...FACT_REASON_CODES] as const
export type ReasonCode = (typeof REASON_CODES)[number]

export const FANOUT_VERDICTS = ['RECONCILED', 'CONTESTED', 'INCOMPLETE', 'HUMAN_RESOLVED'] as const
export type FanoutVerdict = (typeof FANOUT_VERDICTS)[number]

/** `REEVALUATE` is the one directive that is not final: answer the worker, then reconcile again. */
export const FANOUT_DIRECTIVES = ['PROCEED', 'REEVALUATE', 'HALT'] as const
export type FanoutDirective = (typeof FANOUT_DIRECTIVES)[number]

export const FANOUT_STATUSES = ['open', 'decided', 'halted', 'resolved'] as const
export type FanoutStatus = (typeof FANOUT_STATUSES)[number]

/** A subtask's status in a manifest's coverage: its latest result's envelope status, or `MISSING`. */
export const COVERAGE_STATUSES = [...REPORT_STATUSES, 'MISSING'] as const
export type CoverageStatus = (typeof COVERAGE_STATUSES)[number]

/**
 * Audit records only fan-outs write (the engine's own kinds — `manifest.issued`, `escalation.opened`,
 * `resolution.recorded` — carry `data.fanout_id` for them). `result.refused` records a result that arrived
 * after the fan-out's final manifest: it changes nothing, but the attempt is on record.
 */
export const FANOUT_AUDIT_KINDS = ['fanout.created', 'result.recorded', 'result.refused'] as const
export type FanoutAuditKind = (typeof FANOUT_AUDIT_KINDS)[number]
