import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  chooseActionOwner,
  type DecidedDecision,
  type Decision,
  type DecisionInput,
  decide,
  type GroundTruth,
  strictestReading,
} from '../../../src/domain/outcome/decision.ts'
import type { IntendedAction, InterpretationInput } from '../../../src/domain/outcome/interpretation.ts'
import type { OutcomeReading } from '../../../src/domain/outcome/vocabulary.ts'
import { hashJson, type JsonValue } from '../../../src/domain/shared/canonical-json.ts'

// ---------------------------------------------------------------------------
// Builders

const CRIT_A: JsonValue = { require: ['exit_code == 0', 'receipt present'], min_confidence: 0.8 }
const CRIT_B: JsonValue = { require: ['exit_code == 0', 'ledger entry present'], min_confidence: 0.8 }
const SIG_A = hashJson(CRIT_A)
const SIG_B = hashJson(CRIT_B)

const EV1 = { evidence_hash: 'sha256:ev1', evidence_item_hashes: ['sha256:i1', 'sha256:i2'] }
const EV2 = { evidence_hash: 'sha256:ev2', evidence_item_hashes: ['sha256:i1', 'sha256:i2', 'sha256:i3'] }

/** Minutes after noon, so tests can state who was received first. */
function at(minute: number): string {
  return `2026-11-29T12:${String(minute).padStart(2, '0')}:00Z`
}

function interp(
  orchestrator_id: string,
  reading: OutcomeReading,
  overrides: Partial<InterpretationInput> = {},
): InterpretationInput {
  return {
    orchestrator_id,
    success_criterion_signature: SIG_A,
    success_criterion: CRIT_A,
    outcome_interpretation: reading,
    ...EV1,
    intended_action: null,
    revision: 1,
    received_at: at(0),
    ...overrides,
  }
}

function act(...resources: string[]): IntendedAction {
  return { kind: 'compensate', resources }
}

function input(overrides: Partial<DecisionInput> = {}): DecisionInput {
  return {
    interpretations: [],
    expected_orchestrators: [],
    deadline_passed: false,
    has_deadline: false,
    arbiter_orchestrator_id: null,
    has_probe: false,
    fallback_policy: 'escalate',
    reevaluation_rounds: 0,
    ...overrides,
  }
}

function decided(decision: Decision): DecidedDecision {
  assert.equal(decision.kind, 'decided', `expected a decision, got ${JSON.stringify(decision)}`)
  return decision as DecidedDecision
}

/** The parts of a decision a table row states; the receipt is summarised by kind, disjointness and pair ids. */
function summarise(decision: Decision) {
  if (decision.kind !== 'decided') return decision
  const receipt = decision.interpretation_divergence_receipt
  return {
    verdict: decision.verdict,
    directive: decision.directive,
    final: decision.final,
    resolved_outcome: decision.resolved_outcome,
    action_owner: decision.action_owner,
    receipt:
      receipt === null
        ? null
        : {
            kind: receipt.kind,
            actions_disjoint: receipt.actions_disjoint,
            pairs: receipt.pairs.map((p) => `${p.a}|${p.b}`),
          },
    interpretations: decision.interpretations.map((i) => i.orchestrator_id),
    missing_orchestrators: decision.missing_orchestrators,
  }
}

// ---------------------------------------------------------------------------
// Table: one row per branch of the procedure (docs/decision-procedures.md)

interface Row {
  name: string
  input: DecisionInput
  groundTruth?: GroundTruth | null
  expected: ReturnType<typeof summarise>
}

const disagreeing = [
  interp('orch-a', 'success', { received_at: at(1) }),
  interp('orch-b', 'failure', { received_at: at(0) }),
]

const rows: Row[] = [
  // --- waiting and nothing to do
  {
    name: 'pending without a deadline lists the sorted missing orchestrators',
    input: input({
      interpretations: [interp('orch-b', 'success')],
      expected_orchestrators: ['orch-c', 'orch-b', 'orch-a'],
    }),
    expected: { kind: 'pending', missing_orchestrators: ['orch-a', 'orch-c'] },
  },
  {
    name: 'pending while a deadline is set but not passed',
    input: input({
      interpretations: [interp('orch-b', 'success')],
      expected_orchestrators: ['orch-a', 'orch-b'],
      has_deadline: true,
      deadline_passed: false,
    }),
    expected: { kind: 'pending', missing_orchestrators: ['orch-a'] },
  },
  {
    name: 'pending when nobody has reported yet',
    input: input({ expected_orchestrators: ['orch-a', 'orch-a'] }),
    expected: { kind: 'pending', missing_orchestrators: ['orch-a'] },
  },
  {
    name: 'deadline_passed without a deadline does not end the wait',
    input: input({
      interpretations: [interp('orch-b', 'success')],
      expected_orchestrators: ['orch-a', 'orch-b'],
      has_deadline: false,
      deadline_passed: true,
    }),
    expected: { kind: 'pending', missing_orchestrators: ['orch-a'] },
  },
  {
    name: 'deadline passed: decides with whoever reported and lists the missing',
    input: input({
      interpretations: [interp('orch-b', 'partial')],
      expected_orchestrators: ['orch-c', 'orch-a', 'orch-b'],
      has_deadline: true,
      deadline_passed: true,
    }),
    expected: {
      verdict: 'SINGLE_ORCHESTRATOR',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'partial',
      action_owner: 'orch-b',
      receipt: null,
      interpretations: ['orch-b'],
      missing_orchestrators: ['orch-a', 'orch-c'],
    },
  },
  {
    name: 'deadline passed and nobody reported → nothing to decide',
    input: input({ expected_orchestrators: ['orch-a'], has_deadline: true, deadline_passed: true }),
    expected: { kind: 'nothing_to_decide' },
  },
  {
    name: 'no interpretation and nothing expected → nothing to decide',
    input: input(),
    expected: { kind: 'nothing_to_decide' },
  },

  // --- rule 1 and 2 of the procedure
  {
    name: 'one interpretation → SINGLE_ORCHESTRATOR, PROCEED with it',
    input: input({ interpretations: [interp('orch-a', 'failure')] }),
    expected: {
      verdict: 'SINGLE_ORCHESTRATOR',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'failure',
      action_owner: 'orch-a',
      receipt: null,
      interpretations: ['orch-a'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'one interpretation owns the action even when another orchestrator is the designated arbiter',
    input: input({ interpretations: [interp('orch-a', 'success')], arbiter_orchestrator_id: 'orch-z' }),
    expected: {
      verdict: 'SINGLE_ORCHESTRATOR',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'success',
      action_owner: 'orch-a',
      receipt: null,
      interpretations: ['orch-a'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'all equal under the same criteria → AGREED without a receipt; first received owns',
    input: input({
      interpretations: [
        interp('orch-a', 'success', { received_at: at(5) }),
        interp('orch-c', 'success', { received_at: at(1) }),
        interp('orch-b', 'success', { received_at: at(3), ...EV2 }),
      ],
      expected_orchestrators: ['orch-a', 'orch-b', 'orch-c'],
    }),
    expected: {
      verdict: 'AGREED',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'success',
      action_owner: 'orch-c',
      receipt: null,
      interpretations: ['orch-a', 'orch-b', 'orch-c'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'all equal under different criteria → AGREED with a criteria receipt of the differing pairs only',
    input: input({
      interpretations: [
        interp('orch-a', 'failure', { intended_action: act('r1') }),
        interp('orch-b', 'failure', {
          success_criterion_signature: SIG_B,
          success_criterion: CRIT_B,
          intended_action: act('r2'),
        }),
        interp('orch-c', 'failure', { intended_action: act('r3') }),
      ],
      arbiter_orchestrator_id: 'orch-c',
    }),
    expected: {
      verdict: 'AGREED',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'failure',
      action_owner: 'orch-c',
      // actions_disjoint is false although the actions are disjoint: rule 3 is not run without a disagreement.
      receipt: { kind: 'criteria', actions_disjoint: false, pairs: ['orch-a|orch-b', 'orch-b|orch-c'] },
      interpretations: ['orch-a', 'orch-b', 'orch-c'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'agreement ignores a ground truth that disagrees (no probe runs without a disagreement)',
    input: input({
      interpretations: [interp('orch-a', 'success'), interp('orch-b', 'success')],
      has_probe: true,
    }),
    groundTruth: { result: 'failure' },
    expected: {
      verdict: 'AGREED',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'success',
      action_owner: 'orch-a',
      receipt: null,
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'a late orchestrator outside expected_orchestrators counts',
    input: input({
      interpretations: [interp('orch-a', 'success'), interp('orch-late', 'failure')],
      expected_orchestrators: ['orch-a'],
    }),
    expected: {
      verdict: 'CRITERIA_MATCH_EVIDENCE_DIFFERS',
      directive: 'HALT',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      receipt: { kind: 'interpretation', actions_disjoint: false, pairs: ['orch-a|orch-late'] },
      interpretations: ['orch-a', 'orch-late'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'an outsider does not satisfy a missing expected orchestrator',
    input: input({
      interpretations: [interp('orch-a', 'success'), interp('orch-late', 'success')],
      expected_orchestrators: ['orch-a', 'orch-b'],
    }),
    expected: { kind: 'pending', missing_orchestrators: ['orch-b'] },
  },

  // --- resolution rule 1: ground truth
  {
    name: 'ground truth overrides the designated arbiter; the arbiter still owns the follow-up',
    input: input({ interpretations: disagreeing, has_probe: true, arbiter_orchestrator_id: 'orch-a' }),
    groundTruth: { result: 'failure' },
    expected: {
      verdict: 'GROUND_TRUTH_RESOLVES',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'failure',
      action_owner: 'orch-a',
      receipt: { kind: 'interpretation', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'ground truth without an arbiter: the first orchestrator agreeing with it owns',
    input: input({
      interpretations: [
        interp('orch-a', 'success', { received_at: at(0) }),
        interp('orch-b', 'failure', { received_at: at(9) }),
        interp('orch-c', 'failure', { received_at: at(4) }),
      ],
      has_probe: true,
    }),
    groundTruth: { result: 'failure' },
    expected: {
      verdict: 'GROUND_TRUTH_RESOLVES',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'failure',
      action_owner: 'orch-c',
      receipt: { kind: 'interpretation', actions_disjoint: false, pairs: ['orch-a|orch-b', 'orch-a|orch-c'] },
      interpretations: ['orch-a', 'orch-b', 'orch-c'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'ground truth nobody agrees with: the first received owns',
    input: input({ interpretations: disagreeing, has_probe: true }),
    groundTruth: { result: 'partial' },
    expected: {
      verdict: 'GROUND_TRUTH_RESOLVES',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'partial',
      action_owner: 'orch-b',
      receipt: { kind: 'interpretation', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'ground truth also overrides disjoint actions',
    input: input({
      interpretations: [
        interp('orch-a', 'success', { intended_action: act('r1') }),
        interp('orch-b', 'failure', { intended_action: act('r2') }),
      ],
      has_probe: true,
    }),
    groundTruth: { result: 'success' },
    expected: {
      verdict: 'GROUND_TRUTH_RESOLVES',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'success',
      action_owner: 'orch-a',
      receipt: { kind: 'interpretation', actions_disjoint: true, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'a probe error falls through to the designated arbiter',
    input: input({ interpretations: disagreeing, has_probe: true, arbiter_orchestrator_id: 'orch-a' }),
    groundTruth: { result: null },
    expected: {
      verdict: 'ARBITER_DECIDES',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'success',
      action_owner: 'orch-a',
      receipt: { kind: 'interpretation', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'a probe error with nothing else to apply escalates',
    input: input({ interpretations: disagreeing, has_probe: true }),
    groundTruth: { result: null },
    expected: {
      verdict: 'CRITERIA_MATCH_EVIDENCE_DIFFERS',
      directive: 'HALT',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      receipt: { kind: 'interpretation', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },

  // --- resolution rule 2: designated arbiter
  {
    name: 'the designated arbiter decides with its own reading',
    input: input({
      interpretations: [...disagreeing, interp('orch-c', 'partial')],
      arbiter_orchestrator_id: 'orch-b',
      fallback_policy: 'strictest_wins',
    }),
    expected: {
      verdict: 'ARBITER_DECIDES',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'failure',
      action_owner: 'orch-b',
      receipt: {
        kind: 'interpretation',
        actions_disjoint: false,
        pairs: ['orch-a|orch-b', 'orch-a|orch-c', 'orch-b|orch-c'],
      },
      interpretations: ['orch-a', 'orch-b', 'orch-c'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'a designated arbiter that did not interpret is skipped',
    input: input({
      interpretations: disagreeing,
      expected_orchestrators: ['orch-a', 'orch-b', 'orch-z'],
      arbiter_orchestrator_id: 'orch-z',
      has_deadline: true,
      deadline_passed: true,
    }),
    expected: {
      verdict: 'CRITERIA_MATCH_EVIDENCE_DIFFERS',
      directive: 'HALT',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      receipt: { kind: 'interpretation', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: ['orch-z'],
    },
  },

  // --- resolution rule 3: disjoint actions
  {
    name: 'disjoint actions → DISJOINT_ACTIONS, PROCEED, nobody resolves or owns',
    input: input({
      interpretations: [
        interp('orch-a', 'success', { intended_action: act('refund:re_1') }),
        interp('orch-b', 'failure', { intended_action: act('ledger:l_1', 'mail:m_1') }),
      ],
      fallback_policy: 'strictest_wins',
    }),
    expected: {
      verdict: 'DISJOINT_ACTIONS',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      receipt: { kind: 'interpretation', actions_disjoint: true, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'disjoint actions win over a REEVALUATE the evidence would ask for',
    input: input({
      interpretations: [
        interp('orch-a', 'success', { intended_action: act('r1') }),
        interp('orch-b', 'failure', { intended_action: act('r2'), ...EV2 }),
      ],
    }),
    expected: {
      verdict: 'DISJOINT_ACTIONS',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      receipt: { kind: 'evidence_seen', actions_disjoint: true, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'an undeclared action is never disjoint',
    input: input({
      interpretations: [
        interp('orch-a', 'success', { intended_action: act('r1') }),
        interp('orch-b', 'failure', { intended_action: null }),
      ],
    }),
    expected: {
      verdict: 'CRITERIA_MATCH_EVIDENCE_DIFFERS',
      directive: 'HALT',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      receipt: { kind: 'interpretation', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'overlapping resources are not disjoint',
    input: input({
      interpretations: [
        interp('orch-a', 'success', { intended_action: act('r1', 'shared') }),
        interp('orch-b', 'failure', { intended_action: act('shared') }),
      ],
      fallback_policy: 'strictest_wins',
    }),
    expected: {
      verdict: 'POLICY_RESOLVES',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'failure',
      action_owner: 'orch-b',
      receipt: { kind: 'interpretation', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },

  // --- resolution rule 4: re-evaluation
  ...[0, 1].map(
    (rounds): Row => ({
      name: `same criteria, different evidence, round ${rounds} → REEVALUATE (not final)`,
      input: input({
        interpretations: [interp('orch-a', 'success'), interp('orch-b', 'failure', EV2)],
        reevaluation_rounds: rounds,
        fallback_policy: 'strictest_wins',
      }),
      expected: {
        verdict: 'CRITERIA_MATCH_EVIDENCE_DIFFERS',
        directive: 'REEVALUATE',
        final: false,
        resolved_outcome: null,
        action_owner: null,
        receipt: { kind: 'evidence_seen', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
        interpretations: ['orch-a', 'orch-b'],
        missing_orchestrators: [],
      },
    }),
  ),
  {
    name: 'same criteria, different evidence, round 2 → HALT CRITERIA_MATCH_EVIDENCE_DIFFERS',
    input: input({
      interpretations: [interp('orch-a', 'success'), interp('orch-b', 'failure', EV2)],
      reevaluation_rounds: 2,
    }),
    expected: {
      verdict: 'CRITERIA_MATCH_EVIDENCE_DIFFERS',
      directive: 'HALT',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      receipt: { kind: 'evidence_seen', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'same criteria, different evidence, round 2 with strictest_wins → POLICY_RESOLVES',
    input: input({
      interpretations: [interp('orch-a', 'success'), interp('orch-b', 'partial', EV2)],
      reevaluation_rounds: 2,
      fallback_policy: 'strictest_wins',
    }),
    expected: {
      verdict: 'POLICY_RESOLVES',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'partial',
      action_owner: 'orch-b',
      receipt: { kind: 'evidence_seen', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'different criteria (and evidence) never REEVALUATE: round 0 escalates as CRITERIA_DIFFER',
    input: input({
      interpretations: [
        interp('orch-a', 'success'),
        interp('orch-b', 'failure', {
          success_criterion_signature: SIG_B,
          success_criterion: CRIT_B,
          ...EV2,
        }),
      ],
    }),
    expected: {
      verdict: 'CRITERIA_DIFFER',
      directive: 'HALT',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      receipt: { kind: 'criteria', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },

  // --- resolution rule 5: policy
  {
    name: 'strictest_wins picks failure over partial and success',
    input: input({
      interpretations: [
        interp('orch-a', 'success', { received_at: at(0) }),
        interp('orch-b', 'failure', { received_at: at(7) }),
        interp('orch-c', 'partial', { received_at: at(1) }),
        interp('orch-d', 'failure', { received_at: at(3) }),
      ],
      fallback_policy: 'strictest_wins',
    }),
    expected: {
      verdict: 'POLICY_RESOLVES',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'failure',
      action_owner: 'orch-d',
      receipt: {
        kind: 'interpretation',
        actions_disjoint: false,
        pairs: ['orch-a|orch-b', 'orch-a|orch-c', 'orch-a|orch-d', 'orch-b|orch-c', 'orch-c|orch-d'],
      },
      interpretations: ['orch-a', 'orch-b', 'orch-c', 'orch-d'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'strictest_wins resolves a criteria disagreement too',
    input: input({
      interpretations: [
        interp('orch-a', 'success'),
        interp('orch-b', 'partial', {
          success_criterion_signature: 'sha256:opaque',
          success_criterion: undefined,
        }),
      ],
      fallback_policy: 'strictest_wins',
    }),
    expected: {
      verdict: 'POLICY_RESOLVES',
      directive: 'PROCEED',
      final: true,
      resolved_outcome: 'partial',
      action_owner: 'orch-b',
      receipt: { kind: 'criteria', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },

  // --- resolution rule 6: HALT
  {
    name: 'HALT kind criteria → CRITERIA_DIFFER',
    input: input({
      interpretations: [
        interp('orch-a', 'success'),
        interp('orch-b', 'failure', { success_criterion_signature: SIG_B, success_criterion: CRIT_B }),
      ],
    }),
    expected: {
      verdict: 'CRITERIA_DIFFER',
      directive: 'HALT',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      receipt: { kind: 'criteria', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'HALT kind interpretation → CRITERIA_MATCH_EVIDENCE_DIFFERS',
    input: input({ interpretations: [interp('orch-b', 'partial'), interp('orch-a', 'success')] }),
    expected: {
      verdict: 'CRITERIA_MATCH_EVIDENCE_DIFFERS',
      directive: 'HALT',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      receipt: { kind: 'interpretation', actions_disjoint: false, pairs: ['orch-a|orch-b'] },
      interpretations: ['orch-a', 'orch-b'],
      missing_orchestrators: [],
    },
  },
  {
    name: 'criteria differing in any listed pair makes the kind criteria',
    input: input({
      interpretations: [
        interp('orch-a', 'success'),
        interp('orch-b', 'success', { success_criterion_signature: SIG_B, success_criterion: CRIT_B }),
        interp('orch-c', 'failure', EV2),
      ],
    }),
    expected: {
      verdict: 'CRITERIA_DIFFER',
      directive: 'HALT',
      final: true,
      resolved_outcome: null,
      action_owner: null,
      receipt: { kind: 'criteria', actions_disjoint: false, pairs: ['orch-a|orch-c', 'orch-b|orch-c'] },
      interpretations: ['orch-a', 'orch-b', 'orch-c'],
      missing_orchestrators: [],
    },
  },
]

describe('decide: one row per branch of the procedure', () => {
  for (const row of rows) {
    it(row.name, () => {
      const decision = decide(row.input, row.groundTruth ?? null)
      assert.deepEqual(summarise(decision), row.expected)
      // Reversing the input changes nothing.
      const reversed = { ...row.input, interpretations: [...row.input.interpretations].reverse() }
      assert.deepEqual(decide(reversed, row.groundTruth ?? null), decision)
    })
  }
})

describe('decide: the receipt in full', () => {
  it('AGREED under different criteria carries each pair with its criteria and evidence divergence', () => {
    const decision = decided(
      decide(
        input({
          interpretations: [
            interp('orch-b', 'success', {
              success_criterion_signature: SIG_B,
              success_criterion: CRIT_B,
              ...EV2,
            }),
            interp('orch-a', 'success'),
          ],
        }),
        null,
      ),
    )
    const { receipt_digest, ...rest } = decision.interpretation_divergence_receipt!
    assert.deepEqual(rest, {
      kind: 'criteria',
      actions_disjoint: false,
      pairs: [
        {
          a: 'orch-a',
          b: 'orch-b',
          a_interpretation: 'success',
          b_interpretation: 'success',
          a_criterion_signature: SIG_A,
          b_criterion_signature: SIG_B,
          criteria_divergence: [{ pointer: '/require/1', a: 'receipt present', b: 'ledger entry present' }],
          evidence_divergence: {
            a_evidence_hash: 'sha256:ev1',
            b_evidence_hash: 'sha256:ev2',
            only_in_a: [],
            only_in_b: ['sha256:i3'],
          },
        },
      ],
    })
    assert.equal(receipt_digest, hashJson(rest))
  })

  it('a criterion submitted only as a hash gives a null criteria_divergence', () => {
    const decision = decided(
      decide(
        input({
          interpretations: [
            interp('orch-a', 'success'),
            interp('orch-b', 'failure', {
              success_criterion_signature: 'sha256:opaque',
              success_criterion: undefined,
            }),
          ],
        }),
        null,
      ),
    )
    const [only] = decision.interpretation_divergence_receipt!.pairs
    assert.equal(only!.criteria_divergence, null)
    assert.equal(only!.b_criterion_signature, 'sha256:opaque')
    assert.equal(only!.evidence_divergence, null)
  })

  it('decisions carry the input interpretations sorted by orchestrator id, unchanged', () => {
    const all = [interp('orch-c', 'success'), interp('B', 'success'), interp('orch-a', 'success')]
    const before = structuredClone(all)
    const decision = decided(decide(input({ interpretations: all }), null))
    assert.deepEqual(decision.interpretations, [before[1], before[2], before[0]])
    assert.deepEqual(all, before, 'the input is not mutated')
  })

  it('refuses two interpretations for one orchestrator instead of picking one by input order', () => {
    assert.throws(
      () =>
        decide(
          input({
            interpretations: [interp('orch-a', 'success'), interp('orch-a', 'failure', { revision: 2 })],
          }),
          null,
        ),
      RangeError,
    )
  })
})

describe('decide: asking for ground truth', () => {
  const cases: { name: string; input: DecisionInput; expected: boolean }[] = [
    {
      name: 'disagreement with a probe',
      input: input({ interpretations: disagreeing, has_probe: true }),
      expected: true,
    },
    { name: 'disagreement without a probe', input: input({ interpretations: disagreeing }), expected: false },
    {
      name: 'agreement with a probe',
      input: input({ interpretations: [interp('a', 'failure'), interp('b', 'failure')], has_probe: true }),
      expected: false,
    },
    {
      name: 'single interpretation',
      input: input({ interpretations: [interp('a', 'failure')], has_probe: true }),
      expected: false,
    },
    { name: 'nothing at all', input: input({ has_probe: true }), expected: false },
    {
      name: 'pending, even though the reported ones disagree',
      input: input({ interpretations: disagreeing, expected_orchestrators: ['orch-c'], has_probe: true }),
      expected: false,
    },
    {
      name: 'deadline passed with someone missing, and a disagreement',
      input: input({
        interpretations: disagreeing,
        expected_orchestrators: ['orch-c'],
        has_deadline: true,
        deadline_passed: true,
        has_probe: true,
      }),
      expected: true,
    },
    {
      name: 'designated arbiter interpreted: the probe still runs first (it overrides all)',
      input: input({ interpretations: disagreeing, has_probe: true, arbiter_orchestrator_id: 'orch-a' }),
      expected: true,
    },
  ]
  for (const { name, input: given, expected } of cases) {
    it(`${name} → ${expected ? 'needs_ground_truth' : 'no probe'}`, () => {
      assert.equal(decide(given, null).kind === 'needs_ground_truth', expected)
      // With this round's result in hand, it never asks again.
      assert.notEqual(decide(given, { result: 'success' }).kind, 'needs_ground_truth')
      assert.notEqual(decide(given, { result: null }).kind, 'needs_ground_truth')
    })
  }
})

describe('strictestReading', () => {
  const cases: [OutcomeReading[], OutcomeReading][] = [
    [['success'], 'success'],
    [['success', 'partial'], 'partial'],
    [['partial', 'success'], 'partial'],
    [['success', 'failure', 'partial'], 'failure'],
    [['failure', 'success'], 'failure'],
  ]
  for (const [readings, expected] of cases) {
    it(`${readings.join(', ')} → ${expected}`, () => {
      assert.equal(strictestReading(readings), expected)
    })
  }
  it('refuses an empty list', () => {
    assert.throws(() => strictestReading([]), RangeError)
  })
})

describe('chooseActionOwner', () => {
  const cases: {
    name: string
    all: InterpretationInput[]
    resolved: OutcomeReading
    arbiter: string | null
    owner: string
  }[] = [
    {
      name: 'the designated arbiter if it interpreted, even when it disagrees and came last',
      all: [interp('a', 'failure', { received_at: at(0) }), interp('z', 'success', { received_at: at(9) })],
      resolved: 'failure',
      arbiter: 'z',
      owner: 'z',
    },
    {
      name: 'a designated arbiter that did not interpret is ignored',
      all: [interp('a', 'failure', { received_at: at(5) }), interp('b', 'failure', { received_at: at(2) })],
      resolved: 'failure',
      arbiter: 'z',
      owner: 'b',
    },
    {
      name: 'the agreeing orchestrator received first, not the first overall',
      all: [
        interp('a', 'success', { received_at: at(0) }),
        interp('b', 'failure', { received_at: at(6) }),
        interp('c', 'failure', { received_at: at(3) }),
      ],
      resolved: 'failure',
      arbiter: null,
      owner: 'c',
    },
    {
      name: 'a tie on received_at goes to the smallest orchestrator id',
      all: [
        interp('orch-b', 'failure', { received_at: at(1) }),
        interp('orch-a', 'failure', { received_at: at(1) }),
      ],
      resolved: 'failure',
      arbiter: null,
      owner: 'orch-a',
    },
    {
      name: 'the tie-break uses JavaScript string order ("B" < "a")',
      all: [interp('a', 'failure'), interp('B', 'failure')],
      resolved: 'failure',
      arbiter: null,
      owner: 'B',
    },
    {
      name: 'the same instant written with different offsets is a tie',
      all: [
        interp('b', 'failure', { received_at: '2026-11-29T12:00:00Z' }),
        interp('a', 'failure', { received_at: '2026-11-29T13:00:00+01:00' }),
      ],
      resolved: 'failure',
      arbiter: null,
      owner: 'a',
    },
    {
      name: 'received_at compares as instants, not as strings (offset)',
      all: [
        interp('a', 'failure', { received_at: '2026-11-29T11:30:00Z' }),
        interp('b', 'failure', { received_at: '2026-11-29T12:00:00+01:00' }),
      ],
      resolved: 'failure',
      arbiter: null,
      owner: 'b',
    },
    {
      name: 'received_at compares as instants, not as strings (fraction)',
      all: [
        interp('a', 'failure', { received_at: '2026-11-29T12:00:00.001Z' }),
        interp('b', 'failure', { received_at: '2026-11-29T12:00:00Z' }),
      ],
      resolved: 'failure',
      arbiter: null,
      owner: 'b',
    },
    {
      name: 'microseconds below the millisecond still order (PostgreSQL precision)',
      all: [
        interp('a', 'failure', { received_at: '2026-11-29T12:00:00.000200Z' }),
        interp('b', 'failure', { received_at: '2026-11-29T12:00:00.0001Z' }),
      ],
      resolved: 'failure',
      arbiter: null,
      owner: 'b',
    },
    {
      name: 'trailing zeros in the fraction do not make a later time',
      all: [
        interp('b', 'failure', { received_at: '2026-11-29T12:00:00.5000Z' }),
        interp('a', 'failure', { received_at: '2026-11-29T12:00:00.5Z' }),
      ],
      resolved: 'failure',
      arbiter: null,
      owner: 'a',
    },
    {
      name: 'if none agrees, the first received overall',
      all: [
        interp('a', 'success', { received_at: at(4) }),
        interp('b', 'failure', { received_at: at(2) }),
        interp('c', 'failure', { received_at: at(3) }),
      ],
      resolved: 'partial',
      arbiter: null,
      owner: 'b',
    },
  ]
  for (const { name, all, resolved, arbiter, owner } of cases) {
    it(name, () => {
      assert.equal(chooseActionOwner(all, resolved, arbiter), owner)
      assert.equal(chooseActionOwner([...all].reverse(), resolved, arbiter), owner)
    })
  }

  it('refuses a received_at that is not a time', () => {
    assert.throws(
      () => chooseActionOwner([interp('a', 'failure', { received_at: 'yesterday' })], 'failure', null),
      RangeError,
    )
  })

  it('refuses an empty list', () => {
    assert.throws(() => chooseActionOwner([], 'failure', null), RangeError)
  })
})

// ---------------------------------------------------------------------------
// Properties

const IDS = ['a', 'b', 'c', 'd', 'B', 'orch-10', 'orch-9']
const CRITERIA: JsonValue[] = [CRIT_A, CRIT_B, { require: ['exit_code == 0'] }]
// Equal instants in different notations, and instants apart by less than a millisecond.
const TIMES = [
  '2026-11-29T12:00:00Z',
  '2026-11-29T13:00:00+01:00',
  '2026-11-29T12:00:00.0005Z',
  '2026-11-29T11:59:59.999Z',
  '2026-11-29T12:00:01Z',
]
const reading = fc.constantFrom<OutcomeReading>('success', 'partial', 'failure')
// Plain objects, as JSON.parse and the database driver give; null-prototype records would make the
// no-mutation check (structuredClone + deepEqual compares prototypes) fail for the wrong reason.
const PLAIN = { noNullPrototype: true }

const interpretationArb: fc.Arbitrary<InterpretationInput> = fc
  .record(
    {
      orchestrator_id: fc.constantFrom(...IDS),
      criterion: fc.nat({ max: CRITERIA.length - 1 }),
      criterionKnown: fc.boolean(),
      outcome_interpretation: reading,
      evidence: fc.constantFrom(EV1, EV2),
      intended_action: fc.option(
        fc.record(
          {
            kind: fc.constantFrom<IntendedAction['kind']>('proceed', 'compensate', 'retry', 'halt', 'other'),
            resources: fc.uniqueArray(fc.constantFrom('r1', 'r2', 'r3', 'r4'), { maxLength: 2 }),
          },
          PLAIN,
        ),
        { nil: null },
      ),
      revision: fc.integer({ min: 1, max: 4 }),
      received_at: fc.constantFrom(...TIMES),
    },
    PLAIN,
  )
  .map(({ criterion, criterionKnown, evidence, ...rest }) => ({
    ...rest,
    success_criterion_signature: hashJson(CRITERIA[criterion]),
    success_criterion: criterionKnown ? CRITERIA[criterion] : undefined,
    ...evidence,
  }))

const decisionInputArb: fc.Arbitrary<DecisionInput> = fc.record(
  {
    interpretations: fc.uniqueArray(interpretationArb, { selector: (i) => i.orchestrator_id, maxLength: 5 }),
    expected_orchestrators: fc.uniqueArray(fc.constantFrom(...IDS, 'never-reports'), { maxLength: 4 }),
    deadline_passed: fc.boolean(),
    has_deadline: fc.boolean(),
    arbiter_orchestrator_id: fc.option(fc.constantFrom(...IDS), { nil: null }),
    has_probe: fc.boolean(),
    fallback_policy: fc.constantFrom<DecisionInput['fallback_policy']>('escalate', 'strictest_wins'),
    reevaluation_rounds: fc.nat({ max: 3 }),
  },
  PLAIN,
)

const groundTruthArb: fc.Arbitrary<GroundTruth | null> = fc.option(
  fc.record({ result: fc.option(reading, { nil: null }) }),
  { nil: null },
)

/** Inputs that always reach a decision: every expected orchestrator reported, or the deadline passed. */
const decidableInputArb = decisionInputArb.map((given) => ({
  ...given,
  has_deadline: true,
  deadline_passed: true,
}))

function allEqual(interpretations: readonly InterpretationInput[]): boolean {
  return interpretations.every((i) => i.outcome_interpretation === interpretations[0]!.outcome_interpretation)
}

describe('decide: properties', () => {
  it('the result is identical under any permutation of interpretations and expected orchestrators', () => {
    const arb = fc.tuple(decisionInputArb, groundTruthArb).chain(([given, truth]) =>
      fc.tuple(
        fc.constant(given),
        fc.constant(truth),
        fc.shuffledSubarray(given.interpretations, {
          minLength: given.interpretations.length,
          maxLength: given.interpretations.length,
        }),
        fc.shuffledSubarray(given.expected_orchestrators, {
          minLength: given.expected_orchestrators.length,
          maxLength: given.expected_orchestrators.length,
        }),
      ),
    )
    fc.assert(
      fc.property(arb, ([given, truth, interpretations, expected]) => {
        const permuted = { ...given, interpretations, expected_orchestrators: expected }
        assert.deepEqual(decide(permuted, truth), decide(given, truth))
      }),
      { numRuns: 500 },
    )
  })

  it('a PROCEED with resolved_outcome names exactly one action_owner among the interpretations, by the action-owner rule', () => {
    fc.assert(
      fc.property(decidableInputArb, groundTruthArb, (given, truth) => {
        const decision = decide(given, truth)
        if (decision.kind !== 'decided') return
        const ids = decision.interpretations.map((i) => i.orchestrator_id)
        if (decision.directive === 'PROCEED' && decision.resolved_outcome !== null) {
          assert.equal(typeof decision.action_owner, 'string')
          assert.ok(ids.includes(decision.action_owner!), `${decision.action_owner} not in ${ids}`)
          const arbiter = given.arbiter_orchestrator_id
          if (arbiter !== null && ids.includes(arbiter)) {
            assert.equal(decision.action_owner, arbiter)
          } else if (
            decision.interpretations.some((i) => i.outcome_interpretation === decision.resolved_outcome)
          ) {
            const owner = decision.interpretations.find((i) => i.orchestrator_id === decision.action_owner)!
            assert.equal(owner.outcome_interpretation, decision.resolved_outcome)
          }
        } else {
          assert.equal(decision.action_owner, null)
        }
      }),
      { numRuns: 500 },
    )
  })

  it('REEVALUATE and HALT never resolve; only REEVALUATE is not final', () => {
    fc.assert(
      fc.property(decidableInputArb, groundTruthArb, (given, truth) => {
        const decision = decide(given, truth)
        if (decision.kind !== 'decided') return
        assert.equal(decision.final, decision.directive !== 'REEVALUATE')
        if (decision.directive !== 'PROCEED') {
          assert.equal(decision.resolved_outcome, null)
          assert.equal(decision.action_owner, null)
        }
        if (decision.directive === 'REEVALUATE') {
          assert.equal(decision.verdict, 'CRITERIA_MATCH_EVIDENCE_DIFFERS')
          assert.equal(decision.interpretation_divergence_receipt!.kind, 'evidence_seen')
          assert.ok(given.reevaluation_rounds < 2)
        }
        if (decision.directive === 'HALT') {
          assert.equal(given.fallback_policy, 'escalate')
          const kind = decision.interpretation_divergence_receipt!.kind
          assert.equal(
            decision.verdict,
            kind === 'criteria' ? 'CRITERIA_DIFFER' : 'CRITERIA_MATCH_EVIDENCE_DIFFERS',
          )
        }
        assert.notEqual(decision.verdict, 'HUMAN_RESOLVED')
      }),
      { numRuns: 500 },
    )
  })

  it('when all readings are equal the directive is PROCEED with that reading, never HALT or REEVALUATE', () => {
    const agreeing = fc
      .tuple(decidableInputArb, reading)
      .map(([given, common]) => ({
        ...given,
        interpretations: given.interpretations.map((i) => ({ ...i, outcome_interpretation: common })),
      }))
      .filter((given) => given.interpretations.length > 0)
    fc.assert(
      fc.property(agreeing, groundTruthArb, (given, truth) => {
        const decision = decided(decide(given, truth))
        assert.equal(decision.directive, 'PROCEED')
        assert.equal(decision.resolved_outcome, given.interpretations[0]!.outcome_interpretation)
        assert.equal(decision.verdict, given.interpretations.length === 1 ? 'SINGLE_ORCHESTRATOR' : 'AGREED')
        const receipt = decision.interpretation_divergence_receipt
        const criteria = new Set(given.interpretations.map((i) => i.success_criterion_signature))
        assert.equal(receipt === null, criteria.size === 1)
        if (receipt !== null) {
          assert.equal(receipt.kind, 'criteria')
          assert.equal(receipt.actions_disjoint, false)
          for (const pair of receipt.pairs)
            assert.notEqual(pair.a_criterion_signature, pair.b_criterion_signature)
        }
        // Agreement never consults the probe, nor asks for it.
        assert.deepEqual(decide(given, truth), decide(given, null))
      }),
      { numRuns: 300 },
    )
  })

  it('receipt_digest always equals the recomputed hash, and pairs are sorted with a < b', () => {
    fc.assert(
      fc.property(decidableInputArb, groundTruthArb, (given, truth) => {
        const decision = decide(given, truth)
        if (decision.kind !== 'decided' || decision.interpretation_divergence_receipt === null) return
        const { receipt_digest, ...rest } = decision.interpretation_divergence_receipt
        assert.equal(receipt_digest, hashJson(rest))
        const keys = rest.pairs.map((p) => `${p.a}\u0000${p.b}`)
        for (const p of rest.pairs) assert.ok(p.a < p.b)
        assert.deepEqual(keys, [...new Set(keys)].sort())
        const disagreement = !allEqual(decision.interpretations)
        for (const p of rest.pairs) {
          if (disagreement) assert.notEqual(p.a_interpretation, p.b_interpretation)
          else assert.notEqual(p.a_criterion_signature, p.b_criterion_signature)
          assert.equal(
            p.evidence_divergence === null,
            given.interpretations.find((i) => i.orchestrator_id === p.a)!.evidence_hash ===
              given.interpretations.find((i) => i.orchestrator_id === p.b)!.evidence_hash,
          )
        }
      }),
      { numRuns: 500 },
    )
  })

  it('a ground-truth result decides every disagreement; a probe error changes nothing', () => {
    fc.assert(
      fc.property(decidableInputArb, reading, (given, truth) => {
        fc.pre(!allEqual(given.interpretations) && given.interpretations.length > 1)
        const decision = decided(decide(given, { result: truth }))
        assert.equal(decision.verdict, 'GROUND_TRUTH_RESOLVES')
        assert.equal(decision.resolved_outcome, truth)
        // A probe error decides as if no probe were attached.
        assert.deepEqual(decide(given, { result: null }), decide({ ...given, has_probe: false }, null))
      }),
    )
  })

  it('pending exactly when an expected orchestrator is missing and no deadline has passed', () => {
    fc.assert(
      fc.property(decisionInputArb, groundTruthArb, (given, truth) => {
        const decision = decide(given, truth)
        const reported = new Set(given.interpretations.map((i) => i.orchestrator_id))
        const missing = [...new Set(given.expected_orchestrators)].filter((id) => !reported.has(id)).sort()
        const waiting = missing.length > 0 && !(given.has_deadline && given.deadline_passed)
        const disagreement = new Set(given.interpretations.map((i) => i.outcome_interpretation)).size > 1
        if (waiting) assert.deepEqual(decision, { kind: 'pending', missing_orchestrators: missing })
        else if (given.interpretations.length === 0) assert.deepEqual(decision, { kind: 'nothing_to_decide' })
        else if (disagreement && given.has_probe && truth === null) {
          assert.deepEqual(decision, { kind: 'needs_ground_truth' })
        } else {
          const made = decided(decision)
          assert.deepEqual(made.missing_orchestrators, missing)
          assert.deepEqual(
            made.interpretations.map((i) => i.orchestrator_id),
            [...reported].sort(),
          )
        }
      }),
      { numRuns: 500 },
    )
  })

  it('DISJOINT_ACTIONS is chosen exactly when rule 3 is the first rule that applies', () => {
    fc.assert(
      fc.property(decidableInputArb, groundTruthArb, (given, truth) => {
        const decision = decide(given, truth)
        if (decision.kind !== 'decided' || allEqual(decision.interpretations)) return
        const receipt = decision.interpretation_divergence_receipt!
        const earlier =
          (truth !== null && truth.result !== null) ||
          given.interpretations.some((i) => i.orchestrator_id === given.arbiter_orchestrator_id)
        assert.equal(decision.verdict === 'DISJOINT_ACTIONS', receipt.actions_disjoint && !earlier)
      }),
      { numRuns: 500 },
    )
  })

  it('never mutates its input', () => {
    fc.assert(
      fc.property(decisionInputArb, groundTruthArb, (given, truth) => {
        const before = structuredClone(given)
        decide(given, truth)
        assert.deepEqual(given, before)
      }),
    )
  })
})
