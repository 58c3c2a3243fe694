/**
 * One orchestrator as a LangGraph graph. Several such graphs share one sub-agent: each reads the sub-agent's
 * result in its own "LLM" node (here a plain function), records the outcome and its reading with Arbiter, and asks
 * for the decision. Only the manifest's `action_owner` runs the side-effect node (the refund); every other graph
 * proceeds without it. A `HALT` pauses the graph with `interrupt()` until ops resolve the escalation; the graph then
 * resumes from its checkpoint with the `HUMAN_RESOLVED` manifest.
 */
import {
  type ArbiterClient,
  type CreateOutcomeBody,
  type components,
  type InterpretationBody,
  isEvaluationPending,
  type ManifestEnvelope,
  verifyEnvelope,
} from '@arbiter/client'
import { Annotation, END, interrupt, MemorySaver, START, StateGraph } from '@langchain/langgraph'

export type OutcomeManifest = components['schemas']['OutcomeManifest']

/** What the shared sub-agent returned, as every orchestrator records it (the same body makes the same outcome). */
export type SubagentOutcome = CreateOutcomeBody

/** An orchestrator's reading of the sub-agent's result: its criterion, its verdict, what it means to do. */
export type Reading = Omit<InterpretationBody, 'orchestrator_id'>

/** What a paused graph hands to whoever resumes it. */
export interface EscalationPause {
  outcome_id: string
  manifest_id: string
  verdict: string
}

export interface OrchestratorOptions {
  orchestratorId: string
  /** A client with an orchestrator key bound to `orchestratorId`. */
  arbiter: ArbiterClient
  /** The "LLM" node: reads the sub-agent's result under this orchestrator's own criterion. */
  judge(outcome: SubagentOutcome): Reading
  /** The side effect only the action owner may run. */
  refund(manifest: OutcomeManifest): Promise<void>
  /** Waits between evaluations while another orchestrator has not reported yet. */
  pollIntervalMs?: number
  /** Gives up (the node throws; the graph can be invoked again later) when they have not reported by then. */
  maxWaitMs?: number
}

const OrchestratorState = Annotation.Root({
  subagent: Annotation<SubagentOutcome>,
  reading: Annotation<Reading | null>({ reducer: (_, next) => next, default: () => null }),
  outcomeId: Annotation<string | null>({ reducer: (_, next) => next, default: () => null }),
  manifest: Annotation<OutcomeManifest | null>({ reducer: (_, next) => next, default: () => null }),
  /** What this orchestrator did, in order. */
  actions: Annotation<string[]>({ reducer: (done, next) => done.concat(next), default: () => [] }),
})

type State = typeof OrchestratorState.State

export function buildOrchestratorGraph(options: OrchestratorOptions) {
  const { orchestratorId: me, arbiter } = options
  const pollIntervalMs = options.pollIntervalMs ?? 50
  const maxWaitMs = options.maxWaitMs ?? 30_000

  /** The signed manifest, verified against the service's published keys before anything acts on it. */
  async function verified(envelope: ManifestEnvelope): Promise<OutcomeManifest> {
    const { manifest } = await verifyEnvelope(envelope, await arbiter.jwks())
    if (manifest.kind !== 'outcome') throw new Error(`manifest ${manifest.manifest_id} is not an outcome's`)
    return manifest
  }

  const interpret = (state: State) => ({ reading: options.judge(state.subagent) })

  async function record(state: State) {
    const outcome = await arbiter.outcomes.create(state.subagent)
    await arbiter.outcomes.interpret(outcome.outcome_id, { orchestrator_id: me, ...state.reading! })
    return { outcomeId: outcome.outcome_id }
  }

  async function evaluate(state: State) {
    const deadline = Date.now() + maxWaitMs
    for (;;) {
      const result = await arbiter.outcomes.evaluate(state.outcomeId!)
      if (!isEvaluationPending(result)) return { manifest: await verified(result) }
      if (Date.now() > deadline) {
        throw new Error(
          `outcome ${state.outcomeId}: still waiting for ${result.missing_orchestrators.join(', ')}`,
        )
      }
      await new Promise((resolve) => setTimeout(resolve, pollIntervalMs))
    }
  }

  async function awaitOps(state: State) {
    const halted = state.manifest!
    // Pauses here; whoever resumes the graph (after ops resolved the escalation) passes anything back.
    interrupt<EscalationPause>({
      outcome_id: halted.outcome_id,
      manifest_id: halted.manifest_id,
      verdict: halted.verdict,
    })
    const { manifest_id } = await arbiter.outcomes.get(halted.outcome_id)
    const resolved = await verified(await arbiter.manifests.get(manifest_id!))
    if (resolved.verdict !== 'HUMAN_RESOLVED' || resolved.supersedes !== halted.manifest_id) {
      throw new Error(`outcome ${halted.outcome_id} is not resolved yet (manifest ${manifest_id})`)
    }
    return { manifest: resolved }
  }

  async function refund(state: State) {
    await options.refund(state.manifest!)
    return { actions: ['refund'] }
  }

  const proceed = () => ({ actions: ['proceed'] })

  function route(state: State): 'await_ops' | 'refund' | 'proceed' {
    const manifest = state.manifest!
    if (manifest.directive === 'HALT') return 'await_ops'
    if (manifest.directive !== 'PROCEED') {
      throw new Error(`manifest ${manifest.manifest_id}: ${manifest.directive} needs a revised reading`)
    }
    return manifest.action_owner === me ? 'refund' : 'proceed'
  }

  return new StateGraph(OrchestratorState)
    .addNode('interpret', interpret)
    .addNode('record', record)
    .addNode('evaluate', evaluate)
    .addNode('await_ops', awaitOps)
    .addNode('refund', refund)
    .addNode('proceed', proceed)
    .addEdge(START, 'interpret')
    .addEdge('interpret', 'record')
    .addEdge('record', 'evaluate')
    .addConditionalEdges('evaluate', route, ['await_ops', 'refund', 'proceed'])
    .addConditionalEdges('await_ops', route, ['refund', 'proceed'])
    .addEdge('refund', END)
    .addEdge('proceed', END)
    .compile({ checkpointer: new MemorySaver() })
}
