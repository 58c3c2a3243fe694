/**
 * The outcome decision procedure (docs/decision-procedures.md) as a pure function: plain data in, plain data
 * out — no clock, no database, no network. The caller computes `deadline_passed` from its clock; when the
 * procedure needs the ground-truth probe it says so (`needs_ground_truth`), the caller runs it and decides again
 * with its result.
 */
import { compareInstants, parseInstant } from '../shared/instant.ts'
import {
  actionsDisjoint,
  buildDivergencePairs,
  buildDivergenceReceipt,
  classifyDivergence,
  compareByOrchestrator,
  type DivergenceReceipt,
} from './divergence-receipt.ts'
import type { InterpretationInput } from './interpretation.ts'
import {
  type FallbackPolicy,
  OUTCOME_READINGS,
  type OutcomeDirective,
  type OutcomeReading,
  type OutcomeVerdict,
} from './vocabulary.ts'

export interface DecisionInput {
  /** Latest interpretation per orchestrator, in any order; at most one per orchestrator. */
  interpretations: InterpretationInput[]
  expected_orchestrators: string[]
  /** True when a deadline is set and has passed (the caller owns the clock). */
  deadline_passed: boolean
  has_deadline: boolean
  arbiter_orchestrator_id: string | null
  /** A ground-truth probe is attached to the outcome. */
  has_probe: boolean
  fallback_policy: FallbackPolicy
  /** REEVALUATE manifests issued so far for this outcome. */
  reevaluation_rounds: number
}

/** What the probe said in this evaluation round; `result` null means it errored (the next rule is tried). */
export interface GroundTruth {
  result: OutcomeReading | null
}

export interface DecidedDecision {
  kind: 'decided'
  verdict: OutcomeVerdict
  directive: OutcomeDirective
  final: boolean
  resolved_outcome: OutcomeReading | null
  action_owner: string | null
  interpretation_divergence_receipt: DivergenceReceipt | null
  /** Sorted by orchestrator_id. */
  interpretations: InterpretationInput[]
  /** Expected but not reported, sorted. */
  missing_orchestrators: string[]
}

export type Decision =
  | { kind: 'pending'; missing_orchestrators: string[] }
  | { kind: 'nothing_to_decide' }
  /** A disagreement with a probe attached and no probe result for this round yet: run it, then decide again. */
  | { kind: 'needs_ground_truth' }
  | DecidedDecision

/** Rule 4 allows this many REEVALUATE rounds before falling through. */
export const MAX_REEVALUATION_ROUNDS = 2

/** The strictest reading: `failure` > `partial` > `success` (rule 5). */
export function strictestReading(readings: readonly OutcomeReading[]): OutcomeReading {
  if (readings.length === 0) throw new RangeError('strictestReading needs at least one reading')
  const strictness = (reading: OutcomeReading) => OUTCOME_READINGS.indexOf(reading)
  return readings.reduce((strictest, reading) =>
    strictness(reading) > strictness(strictest) ? reading : strictest,
  )
}

type Received = Pick<InterpretationInput, 'orchestrator_id' | 'outcome_interpretation' | 'received_at'>

/** Received first (as instants, whatever the offset notation); tie → smallest orchestrator_id. */
function receivedFirst<T extends Received>(candidates: readonly T[]): T {
  const keyed = candidates.map((interpretation) => ({
    interpretation,
    at: parseInstant(interpretation.received_at, 'received_at'),
  }))
  keyed.sort(
    (x, y) => compareInstants(x.at, y.at) || compareByOrchestrator(x.interpretation, y.interpretation),
  )
  return keyed[0]!.interpretation
}

/**
 * `action_owner`: the one orchestrator that performs any side-effecting follow-up, so that two orchestrators
 * never both compensate. The designated arbiter if it interpreted; else the orchestrator whose interpretation
 * equals `resolved` and was received first; if none agrees, the one received first (ties → smallest id).
 */
export function chooseActionOwner(
  interpretations: readonly Received[],
  resolved: OutcomeReading,
  arbiter: string | null,
): string {
  if (interpretations.length === 0)
    throw new RangeError('chooseActionOwner needs at least one interpretation')
  if (arbiter !== null && interpretations.some((i) => i.orchestrator_id === arbiter)) return arbiter
  const agreeing = interpretations.filter((i) => i.outcome_interpretation === resolved)
  return receivedFirst(agreeing.length > 0 ? agreeing : interpretations).orchestrator_id
}

/** Sorted copy of the interpretations; refuses two entries for one orchestrator. */
function sortInterpretations(interpretations: readonly InterpretationInput[]): InterpretationInput[] {
  const sorted = [...interpretations].sort(compareByOrchestrator)
  for (let i = 1; i < sorted.length; i++) {
    // "Latest per orchestrator" is the caller's contract. Picking one of two silently
    // would make the result depend on input order, which the procedure forbids.
    if (sorted[i]!.orchestrator_id === sorted[i - 1]!.orchestrator_id) {
      throw new RangeError(
        `two interpretations for orchestrator ${JSON.stringify(sorted[i]!.orchestrator_id)}`,
      )
    }
  }
  return sorted
}

/** Expected orchestrators that have not interpreted, sorted. */
export function missingOrchestrators(
  input: Pick<DecisionInput, 'interpretations' | 'expected_orchestrators'>,
): string[] {
  const reported = new Set(input.interpretations.map((i) => i.orchestrator_id))
  return [...new Set(input.expected_orchestrators)].filter((id) => !reported.has(id)).sort()
}

/** Still waiting: someone expected has not reported and no deadline has passed. */
function isPending(input: DecisionInput, missing: readonly string[]): boolean {
  return missing.length > 0 && !(input.has_deadline && input.deadline_passed)
}

function hasDisagreement(interpretations: readonly InterpretationInput[]): boolean {
  return new Set(interpretations.map((i) => i.outcome_interpretation)).size > 1
}

/** How an evaluation's decided answers are made: each lists its interpretations and missing orchestrators. */
function decisionsOf(interpretations: InterpretationInput[], missing: string[], arbiter: string | null) {
  const base = { interpretations, missing_orchestrators: missing }
  return {
    /** A reading resolved: everyone proceeds with it, one orchestrator owns the follow-up. */
    proceedWith: (
      verdict: OutcomeVerdict,
      resolved: OutcomeReading,
      receipt: DivergenceReceipt | null,
    ): DecidedDecision => ({
      kind: 'decided',
      verdict,
      directive: 'PROCEED',
      final: true,
      resolved_outcome: resolved,
      action_owner: chooseActionOwner(interpretations, resolved, arbiter),
      interpretation_divergence_receipt: receipt,
      ...base,
    }),
    /** No reading resolved: each orchestrator proceeds with its own, nobody owns a shared follow-up. */
    proceedDisjoint: (receipt: DivergenceReceipt): DecidedDecision => ({
      kind: 'decided',
      verdict: 'DISJOINT_ACTIONS',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      interpretation_divergence_receipt: receipt,
      ...base,
    }),
    /** No reading resolved, and nobody proceeds: look again (REEVALUATE) or wait for a human (HALT). */
    unresolved: (
      verdict: OutcomeVerdict,
      directive: OutcomeDirective,
      receipt: DivergenceReceipt,
    ): DecidedDecision => ({
      kind: 'decided',
      verdict,
      directive,
      // PROCEED and HALT are final; REEVALUATE waits for revised interpretations.
      final: directive !== 'REEVALUATE',
      resolved_outcome: null,
      action_owner: null,
      interpretation_divergence_receipt: receipt,
      ...base,
    }),
  }
}

type Decisions = ReturnType<typeof decisionsOf>

/**
 * The outcome decision procedure. The result never depends on the order of `interpretations` or
 * `expected_orchestrators`.
 *
 * `groundTruth` is this round's probe result, null while none has run. It is consulted only for a
 * disagreement (agreement never runs a probe); a disagreement with a probe attached and no result yet is
 * answered `needs_ground_truth`; a probe error (`result: null`) falls through to rule 2.
 */
export function decide(input: DecisionInput, groundTruth: GroundTruth | null): Decision {
  const interpretations = sortInterpretations(input.interpretations)
  const missing = missingOrchestrators(input)
  if (isPending(input, missing)) return { kind: 'pending', missing_orchestrators: missing }
  if (interpretations.length === 0) return { kind: 'nothing_to_decide' }
  const decisions = decisionsOf(interpretations, missing, input.arbiter_orchestrator_id)

  // 1. One interpretation.
  if (interpretations.length === 1) {
    return decisions.proceedWith('SINGLE_ORCHESTRATOR', interpretations[0]!.outcome_interpretation, null)
  }

  // 2. All equal. Agreement under different criteria is latent risk, so the receipt
  // lists the pairs whose criteria signatures differ. `actions_disjoint` is false
  // here: rule 3 is only tested for a disagreement (over no differing pair it would
  // be vacuously true, which would misreport actions as proven disjoint).
  if (!hasDisagreement(interpretations)) {
    const pairs = buildDivergencePairs(
      interpretations,
      (a, b) => a.success_criterion_signature !== b.success_criterion_signature,
    )
    const receipt = pairs.length > 0 ? buildDivergenceReceipt('criteria', false, pairs) : null
    return decisions.proceedWith('AGREED', interpretations[0]!.outcome_interpretation, receipt)
  }

  // 3.1 Ground truth overrides everything; without this round's result the probe must run first.
  if (input.has_probe && groundTruth === null) return { kind: 'needs_ground_truth' }
  return decideDisagreement(input, interpretations, groundTruth, decisions)
}

/** 3. A disagreement: classify it and build the receipt, then the first rule that applies. */
function decideDisagreement(
  input: DecisionInput,
  interpretations: readonly InterpretationInput[],
  groundTruth: GroundTruth | null,
  decisions: Decisions,
): DecidedDecision {
  const pairs = buildDivergencePairs(
    interpretations,
    (a, b) => a.outcome_interpretation !== b.outcome_interpretation,
  )
  const kind = classifyDivergence(pairs)
  const disjoint = actionsDisjoint(interpretations)
  const receipt = buildDivergenceReceipt(kind, disjoint, pairs)

  if (groundTruth !== null && groundTruth.result !== null) {
    return decisions.proceedWith('GROUND_TRUTH_RESOLVES', groundTruth.result, receipt)
  }
  // 3.2 The designated arbiter, if it interpreted.
  const arbiterReading = interpretations.find((i) => i.orchestrator_id === input.arbiter_orchestrator_id)
  if (arbiterReading !== undefined) {
    return decisions.proceedWith('ARBITER_DECIDES', arbiterReading.outcome_interpretation, receipt)
  }
  // 3.3 Disjoint actions: each keeps its own reading, nobody owns a shared follow-up.
  if (disjoint) return decisions.proceedDisjoint(receipt)
  // 3.4 Same criteria, different evidence versions: let them look again, at most twice.
  if (kind === 'evidence_seen' && input.reevaluation_rounds < MAX_REEVALUATION_ROUNDS) {
    return decisions.unresolved('CRITERIA_MATCH_EVIDENCE_DIFFERS', 'REEVALUATE', receipt)
  }
  // 3.5 Policy.
  if (input.fallback_policy === 'strictest_wins') {
    const strictest = strictestReading(interpretations.map((i) => i.outcome_interpretation))
    return decisions.proceedWith('POLICY_RESOLVES', strictest, receipt)
  }
  // 3.6 Escalate to a human.
  return decisions.unresolved(
    kind === 'criteria' ? 'CRITERIA_DIFFER' : 'CRITERIA_MATCH_EVIDENCE_DIFFERS',
    'HALT',
    receipt,
  )
}
