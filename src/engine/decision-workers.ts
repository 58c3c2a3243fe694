import { rememberCanonicalJson } from '../domain/shared/canonical-json.ts'
import type { GroundTruthRecord } from '../probes/probe-runner.ts'
import { WorkerThreads } from '../worker-threads.ts'
import type { CaseDecision, CaseKind, ManifestContent } from './case-kind.ts'

/** What the decision worker is sent: the kind's name and what its `decide` takes. */
export interface DecisionTask {
  kind: string
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
 * Worker threads that decide large cases (src/cases/decision-worker.ts): a reconciliation of thousands of claims
 * and the canonical text of its megabyte manifest would otherwise hold the event loop for tenths of a second
 * each (src/worker-threads.ts).
 */
export class DecisionWorkers extends WorkerThreads<DecisionTask, DecisionAnswer> {
  constructor(size?: number) {
    super('cases/decision-worker', size)
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
  kind: Pick<CaseKind<Case, Input, Content, Pending, unknown, unknown>, 'name' | 'decide' | 'offload'>,
  c: Case,
  input: Input,
  groundTruth: GroundTruthRecord | null,
): Promise<CaseDecision<Content, Pending>> {
  if (workers === undefined || !kind.offload?.(c, input)) return kind.decide(c, input, groundTruth)
  let answer: DecisionAnswer
  try {
    answer = await workers.run({ kind: kind.name, case: c, input, groundTruth })
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
