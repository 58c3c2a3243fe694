/**
 * The words of an outcome case, each defined once. HTTP schemas are built from these tuples (`z.enum(...)`),
 * the database CHECKs list exactly them (a test holds the migrations to it), and the decision uses their types.
 */

/** How an orchestrator reads the sub-agent's result, from least to most strict. */
export const OUTCOME_READINGS = ['success', 'partial', 'failure'] as const
export type OutcomeReading = (typeof OUTCOME_READINGS)[number]

export const OUTCOME_VERDICTS = [
  'SINGLE_ORCHESTRATOR',
  'AGREED',
  'GROUND_TRUTH_RESOLVES',
  'ARBITER_DECIDES',
  'DISJOINT_ACTIONS',
  'POLICY_RESOLVES',
  'CRITERIA_MATCH_EVIDENCE_DIFFERS',
  'CRITERIA_DIFFER',
  'HUMAN_RESOLVED',
] as const
export type OutcomeVerdict = (typeof OUTCOME_VERDICTS)[number]

/** PROCEED and HALT are final; REEVALUATE asks the orchestrators to look again. */
export const OUTCOME_DIRECTIVES = ['PROCEED', 'REEVALUATE', 'HALT'] as const
export type OutcomeDirective = (typeof OUTCOME_DIRECTIVES)[number]

/** What happens to a disagreement no earlier rule settles. */
export const FALLBACK_POLICIES = ['escalate', 'strictest_wins'] as const
export type FallbackPolicy = (typeof FALLBACK_POLICIES)[number]
export const DEFAULT_FALLBACK_POLICY: FallbackPolicy = 'escalate'

export const EVIDENCE_KINDS = ['result_payload', 'exit_code', 'side_effect_receipt', 'log', 'other'] as const
export type EvidenceKind = (typeof EVIDENCE_KINDS)[number]

export const INTENDED_ACTION_KINDS = ['proceed', 'compensate', 'retry', 'halt', 'other'] as const
export type IntendedActionKind = (typeof INTENDED_ACTION_KINDS)[number]

/** An outcome's life: see `transitions.ts` for the moves between them. */
export const OUTCOME_STATUSES = ['open', 'decided', 'halted', 'resolved'] as const
export type OutcomeStatus = (typeof OUTCOME_STATUSES)[number]

/** What a disagreement is about, in order of precedence. */
export const DIVERGENCE_KINDS = ['criteria', 'evidence_seen', 'interpretation'] as const
export type DivergenceKind = (typeof DIVERGENCE_KINDS)[number]

/** Audit records only outcomes write (the engine's own kinds are shared by every case kind). */
export const OUTCOME_AUDIT_KINDS = [
  'outcome.created',
  'evidence.appended',
  'interpretation.recorded',
  'dissent.recorded',
] as const
