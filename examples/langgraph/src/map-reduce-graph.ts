/**
 * Map-reduce with reconciliation, as a LangGraph graph. The plan node declares a fan-out with Arbiter (the
 * question, its facts, one subtask per worker); `Send` runs one worker per subtask, each in its own context, and
 * each worker's return goes to Arbiter as it comes back. Before the reduce step Arbiter reconciles the claims: it
 * finds the conflicts, discounts echoes (two workers citing one source are one source), applies the fan-out's
 * policy and signs a reconciliation manifest. The reduce step writes its answer from that manifest's answers, and
 * a `CONTESTED` manifest (a `HALT`) pauses the graph with `interrupt()` until ops answer the contested facts.
 */
import {
  type ArbiterClient,
  type CreateFanoutBody,
  type components,
  type FanoutResultBody,
  isReconcilePending,
  type ManifestEnvelope,
  verifyEnvelope,
} from '@arbiter/client'
import { Annotation, END, interrupt, MemorySaver, Send, START, StateGraph } from '@langchain/langgraph'

export type ReconciliationManifest = components['schemas']['ReconciliationManifest']
export type ReconciledFact = components['schemas']['ReconciledFact']
export type Subtask = CreateFanoutBody['subtasks'][number]

/** A worker: runs one subtask in its own context and returns the status report (an "LLM" call in real life). */
export type Worker = (subtask: Subtask) => Omit<FanoutResultBody, 'subtask_id'>

/** What a paused graph hands to whoever resumes it. */
export interface ContestedPause {
  fanout_id: string
  manifest_id: string
  verdict: string
  contested: string[]
}

/** The reduce step's product: one answer per fact (or one per qualifier set, when the policy keeps them apart). */
export type Report = Record<string, unknown>

export interface MapReduceOptions {
  /** A client with an orchestrator key bound to the fan-out's `orchestrator_id`. */
  arbiter: ArbiterClient
  worker: Worker
}

const MapReduceState = Annotation.Root({
  fanout: Annotation<CreateFanoutBody>,
  fanoutId: Annotation<string | null>({ reducer: (_, next) => next, default: () => null }),
  /** Subtask ids whose results Arbiter has recorded. */
  returned: Annotation<string[]>({ reducer: (done, next) => done.concat(next), default: () => [] }),
  manifest: Annotation<ReconciliationManifest | null>({ reducer: (_, next) => next, default: () => null }),
  report: Annotation<Report | null>({ reducer: (_, next) => next, default: () => null }),
})

type State = typeof MapReduceState.State
interface WorkerInput {
  fanoutId: string
  subtask: Subtask
}

/** A fact's answer as the reduce step uses it: the chosen value, or the value per qualifier set. */
function answerOf(fact: ReconciledFact): unknown {
  if (fact.status === 'scoped') {
    return fact.variants.map((variant) => ({ qualifiers: variant.qualifiers, value: variant.answer?.value }))
  }
  return fact.answer?.value ?? null
}

export function buildMapReduceGraph(options: MapReduceOptions) {
  const { arbiter } = options

  async function verified(envelope: ManifestEnvelope): Promise<ReconciliationManifest> {
    const { manifest } = await verifyEnvelope(envelope, await arbiter.jwks())
    if (manifest.kind !== 'reconciliation')
      throw new Error(`manifest ${manifest.manifest_id} is not a fan-out's`)
    return manifest
  }

  async function plan(state: State) {
    const fanout = await arbiter.fanouts.create(state.fanout)
    return { fanoutId: fanout.fanout_id }
  }

  const dispatch = (state: State) =>
    state.fanout.subtasks.map((subtask) => new Send('worker', { fanoutId: state.fanoutId!, subtask }))

  async function worker({ fanoutId, subtask }: WorkerInput) {
    const result = options.worker(subtask)
    await arbiter.fanouts.submitResult(fanoutId, {
      subtask_id: subtask.subtask_id,
      ...result,
    } as FanoutResultBody)
    return { returned: [subtask.subtask_id] }
  }

  async function reconcile(state: State) {
    const result = await arbiter.fanouts.reconcile(state.fanoutId!)
    if (isReconcilePending(result))
      throw new Error(`subtasks never returned: ${result.missing_subtasks.join(', ')}`)
    return { manifest: await verified(result) }
  }

  async function awaitOps(state: State) {
    const halted = state.manifest!
    interrupt<ContestedPause>({
      fanout_id: halted.fanout_id,
      manifest_id: halted.manifest_id,
      verdict: halted.verdict,
      contested: halted.facts.filter((fact) => fact.status === 'contested').map((fact) => fact.fact),
    })
    // Resumed after ops answered: reconciling again returns the HUMAN_RESOLVED manifest.
    const resolved = await arbiter.fanouts.reconcile(halted.fanout_id)
    if (isReconcilePending(resolved)) throw new Error('unreachable: a halted fan-out is not pending')
    const manifest = await verified(resolved)
    if (manifest.verdict !== 'HUMAN_RESOLVED' || manifest.supersedes !== halted.manifest_id) {
      throw new Error(`fan-out ${halted.fanout_id} is not resolved yet (manifest ${manifest.manifest_id})`)
    }
    return { manifest }
  }

  const reduce = (state: State) => ({
    report: Object.fromEntries(state.manifest!.facts.map((fact) => [fact.fact, answerOf(fact)])),
  })

  function route(state: State): 'await_ops' | 'reduce' {
    const manifest = state.manifest!
    if (manifest.directive === 'HALT') return 'await_ops'
    if (manifest.directive !== 'PROCEED') {
      throw new Error(
        `manifest ${manifest.manifest_id}: ${manifest.verdict} asks the workers to return again`,
      )
    }
    return 'reduce'
  }

  return new StateGraph(MapReduceState)
    .addNode('plan', plan)
    .addNode('worker', worker)
    .addNode('reconcile', reconcile)
    .addNode('await_ops', awaitOps)
    .addNode('reduce', reduce)
    .addEdge(START, 'plan')
    .addConditionalEdges('plan', dispatch, ['worker'])
    .addEdge('worker', 'reconcile')
    .addConditionalEdges('reconcile', route, ['await_ops', 'reduce'])
    .addEdge('await_ops', 'reduce')
    .addEdge('reduce', END)
    .compile({ checkpointer: new MemorySaver() })
}
