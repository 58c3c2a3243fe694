import { parentPort } from 'node:worker_threads'
import { canonicalJson } from '../domain/shared/canonical-json.ts'
import type { GroundTruthRecord } from '../probes/probe-runner.ts'
import type { CaseDecision, DecisionModule, ManifestContent } from './case-kind.ts'
import type { DecisionAnswer, DecisionTask } from './decision-workers.ts'

/**
 * A large case's decision, in a worker thread of the pool in src/engine/decision-workers.ts: the kind's pure
 * decision and the canonical JSON of the manifest content's object members, the two parts of deciding a case that
 * grow with its inputs. One case per message; answers `{answer}` or `{failed}` (the main thread then decides
 * itself). It names no kind: each task says which module's export decides it (the kind's `offload.decision`),
 * imported once per worker.
 */

type Decide = (
  c: never,
  input: never,
  groundTruth: GroundTruthRecord | null,
) => CaseDecision<ManifestContent, unknown>

const imported = new Map<string, Promise<Decide>>()

function decisionOf({ url, name }: DecisionModule): Promise<Decide> {
  const key = `${url}#${name}`
  let decide = imported.get(key)
  if (decide === undefined) {
    decide = import(url).then((module: Record<string, unknown>) => {
      const found = module[name]
      if (typeof found !== 'function') throw new Error(`${url} exports no function ${name}`)
      return found as Decide
    })
    imported.set(key, decide)
  }
  return decide
}

async function answer(task: DecisionTask): Promise<DecisionAnswer> {
  const decide = await decisionOf(task.decision)
  const decision = decide(task.case as never, task.input as never, task.groundTruth)
  const texts: Record<string, string> = {}
  if (decision.kind === 'decided') {
    for (const [key, value] of Object.entries(decision.decided.content)) {
      if (value !== null && typeof value === 'object') texts[key] = canonicalJson(value)
    }
  }
  return { decision, texts }
}

const port = parentPort!
port.on('message', (task: DecisionTask) => {
  answer(task)
    .then((result) => port.postMessage({ answer: result }))
    .catch((err: unknown) => port.postMessage({ failed: err instanceof Error ? err.message : String(err) }))
})
