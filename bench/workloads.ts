import { randomBytes } from 'node:crypto'
import { type HttpTarget, type Recorder, UnexpectedResponse } from './load.ts'

/** What the virtual orchestrators send: evidence documents of a given size and the 4-call decide path. */

export interface EvidenceItem {
  kind: 'result_payload' | 'exit_code' | 'side_effect_receipt'
  name?: string
  content: unknown
}

/**
 * Evidence whose `result_payload` content serializes to about `contentBytes` of JSON: a result plus a log of
 * ~100-byte lines with random tokens (so the stored document compresses like a real log, not like a repeated
 * string), an exit code and a side-effect receipt.
 */
export function makeEvidence(contentBytes: number): EvidenceItem[] {
  const content: { refund_id: string; status: string; amount_cents: number; log: unknown[] } = {
    refund_id: 're_1',
    status: 'ok',
    amount_cents: 12_900,
    log: [],
  }
  let size = JSON.stringify(content).length
  for (let line = 0; size < contentBytes; line++) {
    const entry = {
      t: new Date(Date.UTC(2026, 10, 29, 17, 0, 0, line * 37)).toISOString(),
      level: line % 7 === 0 ? 'warn' : 'info',
      msg: `step ${line} ok token=${randomBytes(12).toString('hex')}`,
    }
    content.log.push(entry)
    size += JSON.stringify(entry).length + 1
  }
  return [
    { kind: 'result_payload', name: 'result', content },
    { kind: 'exit_code', content: 0 },
    { kind: 'side_effect_receipt', name: 'psp', content: { receipt: 'r-991', ledger: 'eu-1' } },
  ]
}

/** One criteria document for every orchestrator: the disagreement is over the reading, not the criteria. */
export const SUCCESS_CRITERION = { require: ['exit_code == 0', 'receipt present'], min_confidence: 0.8 }

let runCounter = 0
const runPrefix = `bench-${process.pid}-${Date.now().toString(36)}`

export interface DecidePathOptions {
  /** Orchestrator ids; the first is the designated arbiter and reads 'failure', then readings alternate. */
  orchestrators: readonly string[]
  /** The key that creates and evaluates the outcome. */
  creatorKey: string
  /** The key each orchestrator submits with. */
  keyFor: (orchestratorId: string) => string
  evidence: EvidenceItem[]
  /** List the orchestrators in `expected_orchestrators` (at most 100 are allowed). */
  expectAll: boolean
  subagentId: string
  /**
   * Called as each write's 2xx answer arrives, with the audit record it wrote: its kind, outcome and orchestrator
   * (null when the record names none).
   */
  onAcknowledged?: (kind: string, outcomeId: string, orchestratorId: string | null) => void
}

export interface DecidePathResult {
  manifestId: string
  manifestBytes: number
}

/**
 * The full orchestrator path for one outcome, each call recorded under its own label ('create', 'interpret',
 * 'evaluate') and the whole path under 'path':
 * POST /v1/outcomes → one POST .../interpretations per orchestrator (orchestrator 0 'failure', 1 'success', …,
 * all under the same success_criterion) → POST .../evaluate, which must answer 200 with ARBITER_DECIDES.
 */
export async function decidePath(
  target: HttpTarget,
  rec: Recorder,
  options: DecidePathOptions,
): Promise<DecidePathResult> {
  const runId = `${runPrefix}-${++runCounter}`
  const arbiter = options.orchestrators[0]!
  const started = performance.now()
  const created = await target.call<{ outcome_id: string }>(rec, 'POST', '/v1/outcomes', {
    key: options.creatorKey,
    label: 'create',
    expect: [201],
    body: {
      subagent_id: options.subagentId,
      run_id: runId,
      evidence: options.evidence,
      ...(options.expectAll ? { expected_orchestrators: options.orchestrators } : {}),
      arbiter_orchestrator_id: arbiter,
    },
  })
  const outcomeId = created.body.outcome_id
  options.onAcknowledged?.('outcome.created', outcomeId, null)
  for (const [index, orchestratorId] of options.orchestrators.entries()) {
    const fails = index % 2 === 0
    await target.call(rec, 'POST', `/v1/outcomes/${outcomeId}/interpretations`, {
      key: options.keyFor(orchestratorId),
      label: 'interpret',
      expect: [201],
      body: {
        orchestrator_id: orchestratorId,
        success_criterion: SUCCESS_CRITERION,
        outcome_interpretation: fails ? 'failure' : 'success',
        intended_action: { kind: fails ? 'compensate' : 'proceed', resources: [`refund:${runId}`] },
        rationale: fails ? 'receipt missing from ledger' : 'exit code 0 and receipt present',
      },
    })
    options.onAcknowledged?.('interpretation.recorded', outcomeId, orchestratorId)
  }
  const evaluated = await target.call<{ manifest: { manifest_id: string; verdict: string } }>(
    rec,
    'POST',
    `/v1/outcomes/${outcomeId}/evaluate`,
    { key: options.creatorKey, label: 'evaluate', expect: [200], body: {} },
  )
  options.onAcknowledged?.('manifest.issued', outcomeId, null)
  rec.add('path', performance.now() - started, false)
  const { manifest } = evaluated.body
  if (manifest.verdict !== 'ARBITER_DECIDES') {
    const message = `evaluate: verdict ${manifest.verdict}, expected ARBITER_DECIDES`
    rec.failure(message)
    throw new UnexpectedResponse(message)
  }
  return { manifestId: manifest.manifest_id, manifestBytes: evaluated.bytes }
}

/** Creates an API key through the admin API and returns its secret. */
export async function createKey(
  target: HttpTarget,
  adminKey: string,
  body: { role: 'orchestrator' | 'dashboard' | 'ops' | 'admin'; orchestrator_ids?: string[]; label: string },
): Promise<string> {
  const res = await target.call<{ key: string }>(null, 'POST', '/v1/admin/keys', {
    key: adminKey,
    label: 'keys',
    expect: [201],
    body,
  })
  return res.body.key
}
