import type { Queryable } from '../../db/pool.ts'
import { probeById } from '../../db/repositories/probes.ts'
import { queryFirst, queryRows, runStatement } from '../../db/statement.ts'
import { actionOwnerErrors } from '../../domain/outcome/action-owner.ts'
import { chooseActionOwner, type DecisionInput, missingOrchestrators } from '../../domain/outcome/decision.ts'
import type { DivergenceReceipt } from '../../domain/outcome/divergence-receipt.ts'
import type { InterpretationInput, ManifestInterpretation } from '../../domain/outcome/interpretation.ts'
import { transitionOutcome } from '../../domain/outcome/transitions.ts'
import type {
  OutcomeDirective,
  OutcomeReading,
  OutcomeStatus,
  OutcomeVerdict,
} from '../../domain/outcome/vocabulary.ts'
import { hashJson } from '../../domain/shared/canonical-json.ts'
import { HUMAN_RESOLVED } from '../../domain/vocabulary.ts'
import type { CaseKind, StoredManifest } from '../../engine/case-kind.ts'
import { moduleBeside } from '../../engine/decision-workers.ts'
import { AppError } from '../../errors.ts'
import type { GroundTruthRecord } from '../../probes/probe-runner.ts'
import { decideOutcomeCase, listedEvidenceItems, OFFLOAD_MIN_EVIDENCE_ITEMS } from './decision.ts'
import {
  type JudgingInterpretation,
  latestInterpretationsJudging,
  latestInterpretationsOf,
  outcomeForDecision,
  splitOutcomeForDecision,
} from './interpretation-repository.ts'
import {
  type OutcomeRow,
  outcomeById,
  outcomeLock,
  outcomeStateUpdate,
  outcomeStateUpdateIf,
} from './repository.ts'

/** The fields of an outcome manifest the outcome kind fills (the engine adds kind, id, time and supersedes). */
export interface OutcomeManifestContent {
  outcome_id: string
  subagent_id: string
  run_id: string
  verdict: OutcomeVerdict
  directive: OutcomeDirective
  resolved_outcome: OutcomeReading | null
  subagent_outcome_evidence_hash: string
  /** Latest per orchestrator, sorted by orchestrator_id. */
  interpretations: ManifestInterpretation[]
  interpretation_divergence_receipt: DivergenceReceipt | null
  ground_truth_arbiter_predicate: GroundTruthRecord | null
  action_owner: string | null
  missing_orchestrators: string[]
  resolution: { by: string; rationale: string } | null
}

/** The signed outcome manifest. */
export interface OutcomeManifest extends OutcomeManifestContent {
  kind: 'outcome'
  manifest_id: string
  issued_at: string
  supersedes: string | null
}

/** What a human answers to a HALTed outcome. */
export interface OutcomeResolution {
  outcome: OutcomeReading
  rationale: string
  /** Defaults to the usual action-owner rule for the answer. */
  action_owner?: string | undefined
}

/** What a 202 answer names while some expected orchestrator has not interpreted. */
export interface OutcomePending {
  missing_orchestrators: string[]
}

/** An interpretation as the decision reads it, with the item hashes of the evidence version it judged. */
export function toInterpretationInput(row: JudgingInterpretation): InterpretationInput {
  return {
    orchestrator_id: row.orchestrator_id,
    success_criterion_signature: row.success_criterion_signature,
    success_criterion: row.has_criterion ? (row.success_criterion ?? null) : undefined,
    outcome_interpretation: row.outcome_interpretation,
    evidence_hash: row.evidence_hash,
    evidence_item_hashes: row.item_hashes,
    intended_action: row.intended_action,
    revision: row.revision,
    received_at: row.received_at,
  }
}

async function loadDecisionInput(tx: Queryable, outcome: OutcomeRow, now: Date): Promise<DecisionInput> {
  const rows = await queryRows(tx, latestInterpretationsJudging(outcome.id))
  return decisionInput(
    outcome,
    rows.map((row) => ({ ...row, received_at: row.received_at.toISOString() })),
    now,
  )
}

/** What the decision reads: the outcome and each orchestrator's latest interpretation. */
function decisionInput(outcome: OutcomeRow, judging: JudgingInterpretation[], now: Date): DecisionInput {
  return {
    interpretations: judging.map(toInterpretationInput),
    expected_orchestrators: outcome.expected_orchestrators,
    has_deadline: outcome.deadline !== null,
    deadline_passed: outcome.deadline !== null && outcome.deadline.getTime() <= now.getTime(),
    arbiter_orchestrator_id: outcome.arbiter_orchestrator_id,
    has_probe: outcome.probe_id !== null,
    fallback_policy: outcome.fallback_policy,
    reevaluation_rounds: outcome.reevaluation_rounds,
  }
}

/** The HALT's findings, carried unchanged into the manifest that resolves it (stored HALTs may predate `kind`). */
function haltFindings(halt: StoredManifest) {
  const manifest = halt as unknown as OutcomeManifest
  return {
    outcome_id: manifest.outcome_id,
    subagent_id: manifest.subagent_id,
    run_id: manifest.run_id,
    subagent_outcome_evidence_hash: manifest.subagent_outcome_evidence_hash,
    interpretations: manifest.interpretations,
    interpretation_divergence_receipt: manifest.interpretation_divergence_receipt,
    ground_truth_arbiter_predicate: manifest.ground_truth_arbiter_predicate,
    missing_orchestrators: manifest.missing_orchestrators,
  }
}

function nextState(outcome: OutcomeRow, event: Parameters<typeof transitionOutcome>[1]) {
  const next = transitionOutcome(outcome, event)
  if (!next.ok) throw new AppError('CONFLICT', next.reason, { manifest_id: outcome.manifest_id })
  return next.state
}

/**
 * Outcomes on the case engine: one sub-agent result, several orchestrators' interpretations, one decision
 * (docs/decision-procedures.md), an optional ground-truth probe, escalation to a human on HALT.
 */
export const outcomeCase: CaseKind<
  OutcomeRow,
  DecisionInput,
  OutcomeManifestContent,
  OutcomePending,
  OutcomeResolution
> = {
  name: 'outcome',
  manifestKind: 'outcome',
  noun: 'outcome',

  lock: (tx, id) => queryFirst(tx, outcomeLock(id)),
  find: (db, id) => queryFirst(db, outcomeById(id)),
  caseId: (outcome) => outcome.id,
  status: (outcome): OutcomeStatus => outcome.status,
  manifestId: (outcome) => outcome.manifest_id,
  round: () => 0,
  auditSubject: (outcome) => ({ outcome_id: outcome.id, subagent_id: outcome.subagent_id }),
  auditQuery: (id) => ({ outcomeId: id }),

  loadInput: loadDecisionInput,

  inputsDigest: (outcome, input) =>
    hashJson({
      interpretations: input.interpretations.map((i) => [i.orchestrator_id, i.revision]).sort(),
      evidence_hash: outcome.evidence_hash,
      missing: missingOrchestrators(input),
    }),

  decide: decideOutcomeCase,
  // An outcome of many evidence items judged on versions far apart takes tens of milliseconds to decide and
  // canonicalize: a worker thread does it.
  offload: {
    when: (_outcome, input) => listedEvidenceItems(input) >= OFFLOAD_MIN_EVIDENCE_ITEMS,
    decision: moduleBeside(import.meta.url, './decision', 'decideOutcomeCase'),
  },

  recordDecision(outcome, decision, manifestId) {
    const state = nextState(outcome, { type: 'manifest_issued', directive: decision.content.directive })
    return outcomeStateUpdate(outcome.id, { ...state, manifestId })
  },

  // Every input of an outcome's decision writes its row: an interpretation (the bound on its next manifest), new
  // evidence (its evidence_hash), a decision or resolution (its state); its probe runs are for the transaction
  // path alone.
  optimistic: {
    async read(db, id, now) {
      const found = splitOutcomeForDecision(await queryFirst(db, outcomeForDecision(id)))
      return found && { ...found, input: decisionInput(found.case, found.judging, now) }
    },
    recordDecisionIf(outcome, version, decision, manifestId) {
      const state = nextState(outcome, { type: 'manifest_issued', directive: decision.content.directive })
      return outcomeStateUpdateIf(outcome.id, version, { ...state, manifestId })
    },
  },

  groundTruth: {
    attached: (outcome) => outcome.probe_id !== null,
    async prepare(tx, outcome) {
      const probe = await queryFirst(tx, probeById(outcome.probe_id!))
      if (!probe) throw new Error(`outcome ${outcome.id} references missing probe ${outcome.probe_id}`)
      return {
        probe,
        params: outcome.probe_params ?? {},
        template: { subagent_id: outcome.subagent_id, run_id: outcome.run_id },
      }
    },
  },

  resolution: {
    async checkAnswer(tx, outcome, answer) {
      const interpreting = (await queryRows(tx, latestInterpretationsOf([outcome.id]))).map(
        (row) => row.orchestrator_id,
      )
      const errors = actionOwnerErrors(answer.action_owner, {
        expected_orchestrators: outcome.expected_orchestrators,
        interpreting_orchestrators: interpreting,
      })
      if (errors.length > 0) {
        throw new AppError(
          'UNPROCESSABLE',
          `action_owner ${JSON.stringify(answer.action_owner)} is neither an expected nor an interpreting orchestrator of this outcome`,
          {},
          errors.map((error) => ({ ...error, path: `body${error.path}` })),
        )
      }
    },

    haltManifestId(outcome) {
      nextState(outcome, { type: 'resolution_recorded' })
      return outcome.manifest_id!
    },

    resolve(outcome, halt, answer, by) {
      const findings = haltFindings(halt)
      const actionOwner =
        answer.action_owner ??
        chooseActionOwner(findings.interpretations, answer.outcome, outcome.arbiter_orchestrator_id)
      return {
        content: {
          ...findings,
          verdict: HUMAN_RESOLVED,
          directive: 'PROCEED',
          resolved_outcome: answer.outcome,
          action_owner: actionOwner,
          resolution: { by, rationale: answer.rationale },
        },
        data: {
          outcome: answer.outcome,
          rationale: answer.rationale,
          action_owner: actionOwner,
          supersedes: halt.manifest_id,
        },
      }
    },

    async recordResolution(tx, outcome, manifestId) {
      const state = nextState(outcome, { type: 'resolution_recorded' })
      await runStatement(tx, outcomeStateUpdate(outcome.id, { ...state, manifestId }))
    },
  },
}
