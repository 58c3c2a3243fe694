import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import canonicalize from 'canonicalize'
import type { TestApp } from './app.ts'

/** Independent of the service's own helpers: the hash as a client computes it (sha256 of the JCS text). */
export function clientHash(value: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalize(value)!).digest('hex')}`
}

export function clientEvidenceHash(items: unknown[]): string {
  return clientHash([...new Set(items.map(clientHash))].sort())
}

let runCounter = 0
export function uniqueRun(prefix = 'run'): string {
  runCounter += 1
  return `${prefix}-${process.pid}-${Date.now()}-${runCounter}`
}

export const EVIDENCE = [
  { kind: 'result_payload', name: 'result', content: { refund_id: 're_1', status: 'ok' } },
  { kind: 'exit_code', content: 0 },
]

export interface OutcomeBody {
  subagent_id: string
  run_id: string
  evidence: unknown[]
  expected_orchestrators?: string[]
  deadline?: string
  arbiter_orchestrator_id?: string
  probe?: { probe_id: string; params?: Record<string, unknown> }
  fallback_policy?: 'escalate' | 'strictest_wins'
}

export async function createOutcome(t: TestApp, key: string, body: Partial<OutcomeBody> = {}) {
  const response = await t.request(key, {
    method: 'POST',
    url: '/v1/outcomes',
    payload: { subagent_id: 'refund-agent', run_id: uniqueRun(), evidence: EVIDENCE, ...body },
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json() as { outcome_id: string; evidence_hash: string; [k: string]: unknown }
}

export interface InterpretationBody {
  orchestrator_id: string
  outcome_interpretation: 'success' | 'partial' | 'failure'
  success_criterion?: unknown
  success_criterion_hash?: string
  evidence_hash?: string
  intended_action?: { kind: string; resources: string[] }
  rationale?: string
}

export const CRITERION = { require: ['exit_code == 0', 'receipt present'], min_confidence: 0.8 }

export async function interpret(
  t: TestApp,
  key: string,
  outcomeId: string,
  body: InterpretationBody,
  status = 201,
) {
  const response = await t.request(key, {
    method: 'POST',
    url: `/v1/outcomes/${outcomeId}/interpretations`,
    payload: { success_criterion: CRITERION, ...body },
  })
  assert.equal(response.statusCode, status, response.body)
  return response.json()
}

export async function evaluate(t: TestApp, key: string, outcomeId: string, status = 200) {
  const response = await t.request(key, { method: 'POST', url: `/v1/outcomes/${outcomeId}/evaluate` })
  assert.equal(response.statusCode, status, response.body)
  return response.json()
}

/**
 * An outcome orch-a reads as `failure` and orch-b as `success` (`a` speaks for orch-a, `b` for orch-b). The
 * outcome body and either interpretation can add or change fields.
 */
export async function disputedOutcome(
  t: TestApp,
  a: string,
  b: string,
  options: {
    outcome?: Partial<OutcomeBody>
    orchA?: Partial<InterpretationBody>
    orchB?: Partial<InterpretationBody>
  } = {},
) {
  const outcome = await createOutcome(t, a, options.outcome)
  await interpret(t, a, outcome.outcome_id, {
    orchestrator_id: 'orch-a',
    outcome_interpretation: 'failure',
    ...options.orchA,
  })
  await interpret(t, b, outcome.outcome_id, {
    orchestrator_id: 'orch-b',
    outcome_interpretation: 'success',
    ...options.orchB,
  })
  return outcome
}

/**
 * An outcome two orchestrators disagree on under different criteria, with no arbiter or probe: it HALTs and
 * opens an escalation. `a` speaks for orch-a, `b` for orch-b.
 */
export async function haltedOutcome(t: TestApp, a: string, b: string) {
  const outcome = await disputedOutcome(t, a, b, {
    orchB: { success_criterion: { require: ['exit_code == 0'] } },
  })
  const envelope = await evaluate(t, a, outcome.outcome_id)
  assert.equal(envelope.manifest.directive, 'HALT')
  return { outcome, manifest: envelope.manifest, envelope }
}

/**
 * An envelope without its log position: the answer that issues a manifest comes before the sequencer places it
 * (`audit_seq: null`), later reads carry the seq; the signed bytes are the same.
 */
export function signedPart<T extends { audit_seq?: unknown }>(envelope: T): T {
  return { ...envelope, audit_seq: null }
}
