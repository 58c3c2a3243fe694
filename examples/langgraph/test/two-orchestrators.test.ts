import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { createArbiterClient } from '@arbiter/client'
import { Command } from '@langchain/langgraph'
import { listenTestApp } from '../../../test/helpers/listening-app.ts'
import {
  buildOrchestratorGraph,
  type EscalationPause,
  type OutcomeManifest,
  type Reading,
  type SubagentOutcome,
} from '../src/orchestrator-graph.ts'

/*
 * Two LangGraph orchestrators share one refund sub-agent's result and read it differently, against a live Arbiter
 * (PostgreSQL at TEST_DATABASE_URL, else the embedded database) over HTTP. Nothing is stubbed but the "LLM"
 * nodes, which are plain functions.
 */

const arbiter = await listenTestApp({ after })
const client = async (role: 'orchestrator' | 'ops', ids?: string[]) =>
  createArbiterClient({ baseUrl: arbiter.baseUrl, apiKey: await arbiter.key(role, ids) })
const [keyA, keyB, ops] = await Promise.all([
  client('orchestrator', ['orch-a']),
  client('orchestrator', ['orch-b']),
  client('ops'),
])

// orch-a settles for exit code 0; orch-b also wants the payment provider's receipt, which this run lacks.
const lenient = (): Reading => ({
  outcome_interpretation: 'success',
  success_criterion: { require: ['exit_code == 0'] },
  intended_action: { kind: 'proceed', resources: ['order:o-7'] },
})
const strict = (outcome: SubagentOutcome): Reading => {
  const receipt = outcome.evidence.some((item) => item.kind === 'side_effect_receipt')
  return {
    outcome_interpretation: receipt ? 'success' : 'failure',
    success_criterion: { require: ['exit_code == 0', 'receipt present'] },
    intended_action: { kind: 'compensate', resources: ['order:o-7'] },
  }
}

/** Both graphs, with every refund and every judgement they make written down. */
function orchestrators(judgeA: (o: SubagentOutcome) => Reading, judgeB: (o: SubagentOutcome) => Reading) {
  const refunds: { by: string; manifest: OutcomeManifest }[] = []
  const judged: string[] = []
  const graph = (orchestratorId: string, arbiterClient: typeof keyA, judge: typeof judgeA) =>
    buildOrchestratorGraph({
      orchestratorId,
      arbiter: arbiterClient,
      judge: (outcome) => {
        judged.push(orchestratorId)
        return judge(outcome)
      },
      refund: async (manifest) => {
        refunds.push({ by: orchestratorId, manifest })
      },
    })
  return { a: graph('orch-a', keyA, judgeA), b: graph('orch-b', keyB, judgeB), refunds, judged }
}

const evidence: SubagentOutcome['evidence'] = [
  { kind: 'exit_code', content: 0 },
  { kind: 'result_payload', name: 'result', content: { order_id: 'o-7', refund: 'requested' } },
]

describe('two LangGraph orchestrators, one sub-agent', () => {
  it('only the action owner runs the refund; the other proceeds without it', async () => {
    const { a, b, refunds } = orchestrators(lenient, strict)
    const subagent: SubagentOutcome = {
      subagent_id: 'refund-agent',
      run_id: 'lg-run-1',
      evidence,
      expected_orchestrators: ['orch-a', 'orch-b'],
      fallback_policy: 'strictest_wins',
    }
    const [stateA, stateB] = await Promise.all([
      a.invoke({ subagent }, { configurable: { thread_id: 'a-1' } }),
      b.invoke({ subagent }, { configurable: { thread_id: 'b-1' } }),
    ])
    assert.equal(stateA.reading?.outcome_interpretation, 'success')
    assert.equal(stateB.reading?.outcome_interpretation, 'failure')
    assert.equal(stateA.manifest?.manifest_id, stateB.manifest?.manifest_id, 'one manifest for both')
    assert.equal(stateA.manifest?.verdict, 'POLICY_RESOLVES')
    assert.equal(stateA.manifest?.resolved_outcome, 'failure')
    assert.equal(stateA.manifest?.action_owner, 'orch-b')

    assert.deepEqual(stateA.actions, ['proceed'])
    assert.deepEqual(stateB.actions, ['refund'])
    assert.equal(refunds.length, 1, 'the refund ran exactly once')
    assert.equal(refunds[0]?.by, 'orch-b')
  })

  it('gives up waiting for an orchestrator that never reports, naming it', async () => {
    const alone = buildOrchestratorGraph({
      orchestratorId: 'orch-a',
      arbiter: keyA,
      judge: lenient,
      refund: async () => assert.fail('nothing is decided'),
      maxWaitMs: 200,
    })
    const subagent: SubagentOutcome = {
      subagent_id: 'refund-agent',
      run_id: 'lg-run-3',
      evidence,
      expected_orchestrators: ['orch-a', 'orch-b'],
    }
    await assert.rejects(
      alone.invoke({ subagent }, { configurable: { thread_id: 'a-3' } }),
      /waiting for orch-b/,
    )
  })

  it('pauses both graphs on HALT and resumes them from their checkpoints with the HUMAN_RESOLVED manifest', async () => {
    // Different criteria, different readings, no probe, no arbiter, no fallback: nothing settles it but a human.
    const partial = (): Reading => ({ ...lenient(), outcome_interpretation: 'partial' })
    const { a, b, refunds, judged } = orchestrators(partial, strict)
    const subagent: SubagentOutcome = {
      subagent_id: 'refund-agent',
      run_id: 'lg-run-2',
      evidence,
      expected_orchestrators: ['orch-a', 'orch-b'],
    }
    const threadA = { configurable: { thread_id: 'a-2' } }
    const threadB = { configurable: { thread_id: 'b-2' } }
    await Promise.all([a.invoke({ subagent }, threadA), b.invoke({ subagent }, threadB)])

    const [pausedA, pausedB] = await Promise.all([a.getState(threadA), b.getState(threadB)])
    assert.deepEqual(pausedA.next, ['await_ops'])
    assert.deepEqual(pausedB.next, ['await_ops'])
    const pause = pausedA.tasks[0]?.interrupts[0]?.value as EscalationPause
    assert.equal(pause.verdict, 'CRITERIA_DIFFER')
    assert.deepEqual(pausedB.tasks[0]?.interrupts[0]?.value, pause, 'both wait on the same HALT')
    assert.equal(refunds.length, 0, 'nobody acts while the outcome is halted')

    const open = await ops.escalations.list({ status: 'open' })
    assert.ok(open.items.some((item) => item.manifest_id === pause.manifest_id))
    const resolution = await ops.outcomes.resolve(pause.outcome_id, {
      outcome: 'failure',
      rationale: 'the payment provider shows no capture for o-7',
      action_owner: 'orch-b',
    })

    const [stateA, stateB] = await Promise.all([
      a.invoke(new Command({ resume: 'resolved' }), threadA),
      b.invoke(new Command({ resume: 'resolved' }), threadB),
    ])
    for (const state of [stateA, stateB]) {
      assert.equal(state.manifest?.manifest_id, resolution.manifest.manifest_id)
      assert.equal(state.manifest?.verdict, 'HUMAN_RESOLVED')
      assert.equal(state.manifest?.supersedes, pause.manifest_id)
    }
    assert.deepEqual(stateA.actions, ['proceed'])
    assert.deepEqual(stateB.actions, ['refund'])
    assert.equal(refunds.length, 1, 'the refund ran exactly once')
    assert.deepEqual(judged.sort(), ['orch-a', 'orch-b'], 'resumed from the checkpoint: no node ran twice')
  })
})
