import { rememberCanonicalJson } from '../domain/shared/canonical-json.ts'
import type { GroundTruthRecord } from '../probes/probe-runner.ts'
import { WorkerThreads } from '../worker-threads.ts'
import type { CaseDecision, CaseKind, DecisionModule, ManifestContent } from './case-kind.ts'

/** What the decision worker is sent: the kind's decision to import and what it takes. */
export interface DecisionTask {
  decision: DecisionModule
  case: unknown
  input: unknown
  groundTruth: GroundTruthRecord | null
}

/** Its answer: the decision, and the canonical JSON of the decided content's object members, by member name. */
export interface DecisionAnswer {
  decision: CaseDecision<ManifestContent, unknown>
  texts: Record<string, string>
}

/**
 * The export `name` of the module at `path` beside the caller's (`import.meta.url`), with the caller's own
 * extension: `.ts` under tsx, `.js` compiled. What a kind's `offload.decision` says:
 * `moduleBeside(import.meta.url, './decision', 'decideFanout')`.
 */
export function moduleBeside(callerUrl: string, path: string, name: string): DecisionModule {
  const extension = new URL(callerUrl).pathname.match(/\.[cm]?[jt]s$/)?.[0] ?? '.js'
  return { url: new URL(`${path}${extension}`, callerUrl).href, name }
}

/**
 * Worker threads that decide large cases (src/engine/decision-worker.ts): a reconciliation of thousands of claims
 * and the canonical text of its megabyte manifest would otherwise hold the event loop for tenths of a second
 * each (src/worker-threads.ts).
 */
export class DecisionWorkers extends WorkerThreads<DecisionTask, DecisionAnswer> {
  constructor(size?: number) {
    super('engine/decision-worker', size)
  }
}

/**
 * The kind's decision: in a worker thread when the kind says the input is large (`offload`) and the service has
 * decision workers, on this thread otherwise or when the worker fails (the same pure function either way). A
 * decision made in a worker comes back with the canonical text of its content's large members, remembered on
 * the copy received so that signing the manifest does not canonicalize them again here.
 */
export async function decideCase<Case, Input, Content extends ManifestContent, Pending>(
  workers: DecisionWorkers | undefined,
  kind: Pick<CaseKind<Case, Input, Content, Pending, unknown, unknown>, 'decide' | 'offload'>,
  c: Case,
  input: Input,
  groundTruth: GroundTruthRecord | null,
): Promise<CaseDecision<Content, Pending>> {
  const offload = kind.offload
  if (workers === undefined || !offload?.when(c, input)) return kind.decide(c, input, groundTruth)
  let answer: DecisionAnswer
  try {
    answer = await workers.run({ decision: offload.decision, case: c, input, groundTruth })
  } catch {
    return kind.decide(c, input, groundTruth)
  }
  const decision = answer.decision as CaseDecision<Content, Pending>
  if (decision.kind === 'decided') {
    const content = decision.decided.content as unknown as Record<string, unknown>
    for (const [key, text] of Object.entries(answer.texts)) {
      const member = content[key]
      if (member !== null && typeof member === 'object') rememberCanonicalJson(member, text)
    }
  }
  return decision
}
