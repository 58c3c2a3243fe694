/**
 * The words of an outcome case, each defined once: a tuple, or the words of a table that gives each its meaning.
 * HTTP schemas are built from these tuples (`z.enum(...)`), the database CHECKs list exactly them (a test holds
 * the migrations to it), and the decision uses their types.
 */

import { wordsOf } from '../shared/words.ts'

/** How an orchestrator reads the sub-agent's result, from least to most strict. */
export const OUTCOME_READINGS = ['success', 'partial', 'failure'] as const
export type OutcomeReading = (typeof OUTCOME_READINGS)[number]

/** The verdicts, each with when it is given (docs/decision-procedures.md has the procedure). */
const OUTCOME_VERDICT_MEANINGS = {
  SINGLE_ORCHESTRATOR: 'one orchestrator interpreted: its reading stands',
  AGREED: 'every reading is the same',
  GROUND_TRUTH_RESOLVES: "a disagreement the attached probe's result settles",
  ARBITER_DECIDES: "a disagreement the designated arbiter orchestrator's reading settles",
  DISJOINT_ACTIONS: 'a disagreement whose intended actions touch disjoint resources: each keeps its reading',
  POLICY_RESOLVES: 'a disagreement the fallback policy settles (strictest_wins)',
  CRITERIA_MATCH_EVIDENCE_DIFFERS: 'the same criteria judged on different evidence: look again, else HALT',
  CRITERIA_DIFFER: 'the orchestrators meant different things by success: HALT',
  HUMAN_RESOLVED: 'a person resolved the HALT',
} as const
export const OUTCOME_VERDICTS = wordsOf(OUTCOME_VERDICT_MEANINGS)
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

/** Audit records only outcomes write, each with what it records (the engine's own are shared by every kind). */
const OUTCOME_AUDIT_KIND_MEANINGS = {
  'outcome.created': "a sub-agent's result and its first evidence",
  'evidence.appended': 'evidence items added: a new evidence version',
  'interpretation.recorded': "an orchestrator's interpretation, or a new revision of it",
  'dissent.recorded': 'an interpretation that came after the final decision: on record, it changes nothing',
} as const
export const OUTCOME_AUDIT_KINDS = wordsOf(OUTCOME_AUDIT_KIND_MEANINGS)
