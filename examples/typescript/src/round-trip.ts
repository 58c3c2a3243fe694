/**
 * Two orchestrators share one refund sub-agent and read its result differently. Each records its reading, asks
 * Arbiter for the decision, verifies the signed manifest, and acts only if it is the manifest's action owner: the
 * refund is compensated once, not twice.
 *
 *   ARBITER_URL=http://127.0.0.1:8080 ORCH_A_KEY=… ORCH_B_KEY=… node dist/round-trip.js
 *
 * ORCH_A_KEY is an orchestrator key for `orch-a`, ORCH_B_KEY one for `orch-b` (`arbiter keys create`). It prints
 * one JSON line: what each orchestrator did and the manifest they share.
 */
import {
  type ArbiterClient,
  createArbiterClient,
  type InterpretationBody,
  isEvaluationPending,
  verifyEnvelope,
} from '@arbiter/client'

function required(name: string): string {
  const value = process.env[name]
  if (!value) throw new Error(`set ${name}`)
  return value
}

const baseUrl = required('ARBITER_URL')
const runId = process.env.RUN_ID ?? `refund-${Date.now()}`

interface Orchestrator {
  id: string
  client: ArbiterClient
  /** This orchestrator's own reading of the sub-agent's result. */
  reading: Omit<InterpretationBody, 'orchestrator_id'>
}

const orchestrators: Orchestrator[] = [
  {
    id: 'orch-a',
    client: createArbiterClient({ baseUrl, apiKey: required('ORCH_A_KEY') }),
    reading: {
      outcome_interpretation: 'success',
      success_criterion: { require: ['exit_code == 0'] },
      intended_action: { kind: 'proceed', resources: ['refund:re_1'] },
    },
  },
  {
    id: 'orch-b',
    client: createArbiterClient({ baseUrl, apiKey: required('ORCH_B_KEY') }),
    reading: {
      outcome_interpretation: 'failure',
      success_criterion: { require: ['exit_code == 0', 'receipt present'] },
      intended_action: { kind: 'compensate', resources: ['refund:re_1'] },
    },
  },
]

/** Evaluates until every expected orchestrator has reported (the other one may still be on its way). */
async function decision(client: ArbiterClient, outcomeId: string) {
  for (let attempt = 0; attempt < 100; attempt++) {
    const result = await client.outcomes.evaluate(outcomeId)
    if (!isEvaluationPending(result)) {
      const { manifest } = await verifyEnvelope(result, await client.jwks())
      return manifest
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`outcome ${outcomeId} is still waiting for its orchestrators`)
}

async function orchestrate({ id, client, reading }: Orchestrator) {
  // Both record the same result: the natural key (subagent_id, run_id) makes this one outcome.
  const outcome = await client.outcomes.create({
    subagent_id: 'refund-agent',
    run_id: runId,
    evidence: [
      { kind: 'exit_code', content: 0 },
      { kind: 'result_payload', name: 'result', content: { refund_id: 're_1' } },
    ],
    expected_orchestrators: ['orch-a', 'orch-b'],
    fallback_policy: 'strictest_wins',
  })
  await client.outcomes.interpret(outcome.outcome_id, { orchestrator_id: id, ...reading })
  const manifest = await decision(client, outcome.outcome_id)
  const acted = manifest.directive === 'PROCEED' && manifest.action_owner === id
  return { orchestrator: id, manifest, action: acted ? reading.intended_action?.kind : 'none' }
}

const results = await Promise.all(orchestrators.map(orchestrate))
const [first] = results
if (!first || results.some((r) => r.manifest.manifest_id !== first.manifest.manifest_id)) {
  throw new Error('the orchestrators received different manifests')
}
console.log(
  JSON.stringify({
    manifest_id: first.manifest.manifest_id,
    verdict: first.manifest.verdict,
    directive: first.manifest.directive,
    resolved_outcome: first.manifest.resolved_outcome,
    action_owner: first.manifest.action_owner,
    actions: Object.fromEntries(results.map((r) => [r.orchestrator, r.action])),
  }),
)
