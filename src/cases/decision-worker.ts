import { parentPort } from 'node:worker_threads'
import { canonicalJson } from '../domain/shared/canonical-json.ts'
import type { CaseDecision, ManifestContent } from '../engine/case-kind.ts'
import type { DecisionAnswer, DecisionTask } from '../engine/decision-workers.ts'
import type { GroundTruthRecord } from '../probes/probe-runner.ts'
import { decideFanout } from './fanout/decision.ts'
import { decideOutcomeCase } from './outcome/decision.ts'
import { decideReviewCase } from './review/decision.ts'

/**
 * A large case's decision, in a worker thread of the pool in src/engine/decision-workers.ts: the kind's pure
 * decision and the canonical JSON of the manifest content's object members, the two parts of deciding a case that
 * grow with its inputs. One case per message; answers `{answer}` or `{failed}` (the main thread then decides
 * itself). It sits beside the registry, not in the engine, because like the registry it names the kinds.
 */

/** The pure decisions of the kinds that offload (their CaseKind's `offload`), by kind name. */
const DECISIONS: Record<
  string,
  (c: never, input: never, groundTruth: GroundTruthRecord | null) => CaseDecision<ManifestContent, unknown>
> = {
  fanout: decideFanout,
  outcome: decideOutcomeCase,
  review: decideReviewCase,
}

const port = parentPort!
port.on('message', (task: DecisionTask) => {
  try {
    const decide = DECISIONS[task.kind]
    if (!decide) throw new Error(`no decision for ${task.kind} in the decision worker`)
    const decision = decide(task.case as never, task.input as never, task.groundTruth)
    const texts: Record<string, string> = {}
    if (decision.kind === 'decided') {
      for (const [key, value] of Object.entries(decision.decided.content)) {
        if (value !== null && typeof value === 'object') texts[key] = canonicalJson(value)
      }
    }
    port.postMessage({ answer: { decision, texts } satisfies DecisionAnswer })
  } catch (err) {
    port.postMessage({ failed: err instanceof Error ? err.message : String(err) })
  }
})
