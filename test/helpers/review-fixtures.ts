import assert from 'node:assert/strict'
import { after } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { compactVerify, createLocalJWKSet } from 'jose'
import { buildTestApp, type TestApp } from './app.ts'
import { clientHash } from './fixtures.ts'

/** Review fixtures: panels per mode, verdict bodies per status, and the calls every review test makes. */

let keyCounter = 0
export function uniqueReviewKey(prefix = 'PR'): string {
  keyCounter += 1
  return `${prefix}-${process.pid}-${Date.now()}-${keyCounter}`
}

export const DIGEST_0 = `sha256:${'0'.repeat(63)}1`
export const DIGEST_1 = `sha256:${'1'.repeat(63)}2`
export const DIGEST_2 = `sha256:${'2'.repeat(63)}3`
export const DIGEST_3 = `sha256:${'3'.repeat(63)}4`

export const IMPLEMENTER = { model: 'model-m', context_id: 'ctx-1' }

export type Mode = 'do_and_judge' | 'two_stage' | 'debate' | 'council'

export const PANELS: Record<Mode, Record<string, unknown>[]> = {
  do_and_judge: [{ judge_id: 'solo', model: 'model-m', context_id: 'ctx-9' }],
  two_stage: [
    { judge_id: 'spec', model: 'model-l', context_id: 'ctx-2', stage: 1 },
    { judge_id: 'quality', model: 'model-l', context_id: 'ctx-3', stage: 2 },
  ],
  debate: [
    { judge_id: 'amy', model: 'model-l', context_id: 'ctx-2', role: 'judge' },
    { judge_id: 'zed', model: 'model-k', context_id: 'ctx-3', role: 'judge' },
    { judge_id: 'moderator', model: 'model-j', context_id: 'ctx-4', role: 'meta' },
  ],
  council: [
    { judge_id: 'c1', model: 'model-a', context_id: 'ctx-5' },
    { judge_id: 'c2', model: 'Model-B', context_id: 'ctx-6' },
    { judge_id: 'c3', model: 'model-c', context_id: 'ctx-7' },
  ],
}

export function reviewBody(mode: Mode, overrides: Record<string, unknown> = {}) {
  return {
    orchestrator_id: 'orch-a',
    review_key: uniqueReviewKey(),
    mode,
    subject: { digest: DIGEST_0, description: 'refund retry fix', uri: 'https://git.example/pr/481' },
    implementer: IMPLEMENTER,
    judges: PANELS[mode],
    ...overrides,
  }
}

export interface ReviewView {
  review_id: string
  revision: number
  status: string
  manifest_id: string | null
  verdicts: { judge_id: string; status: string }[]
  [key: string]: unknown
}

export async function createReview(
  t: TestApp,
  key: string,
  mode: Mode,
  overrides: Record<string, unknown> = {},
): Promise<ReviewView> {
  const response = await t.request(key, {
    method: 'POST',
    url: '/v1/reviews',
    payload: reviewBody(mode, overrides),
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json()
}

type Status = 'DONE' | 'DONE_WITH_CONCERNS' | 'NEEDS_CONTEXT' | 'BLOCKED'

/** A valid verdict body for `status`; `extra` adds or overrides members (findings, a different summary). */
export function verdict(judgeId: string, status: Status, revision = 0, extra: Record<string, unknown> = {}) {
  const base: Record<string, unknown> = {
    judge_id: judgeId,
    revision,
    status,
    summary: `${judgeId}: ${status}`,
  }
  switch (status) {
    case 'DONE':
      base.evidence = [`${judgeId} read the diff`]
      break
    case 'DONE_WITH_CONCERNS':
      base.evidence = [`${judgeId} read the diff`]
      base.concerns = [`${judgeId} concern`]
      break
    case 'NEEDS_CONTEXT':
      base.blocking_question = `${judgeId} asks: which currency?`
      break
    case 'BLOCKED':
      base.blocking_reason = `${judgeId} blocks: the refund is retried twice`
      break
  }
  return { ...base, ...extra }
}

export function postVerdict(
  t: TestApp,
  key: string,
  reviewId: string,
  body: Record<string, unknown>,
): Promise<LightMyRequestResponse> {
  return t.request(key, { method: 'POST', url: `/v1/reviews/${reviewId}/verdicts`, payload: body })
}

/** Posts a verdict that must be accepted (201). */
export async function judge(t: TestApp, key: string, reviewId: string, body: Record<string, unknown>) {
  const response = await postVerdict(t, key, reviewId, body)
  assert.equal(response.statusCode, 201, response.body)
  return response.json()
}

export function postDecide(t: TestApp, key: string, reviewId: string): Promise<LightMyRequestResponse> {
  return t.request(key, { method: 'POST', url: `/v1/reviews/${reviewId}/decide` })
}

export interface ReviewManifest {
  kind: string
  manifest_id: string
  review_id: string
  revision: number
  verdict: string
  directive: string
  verdicts: {
    judge_id: string
    status: string
    stage: number | null
    role: string | null
    concerns: string[]
    verdict_digest: string
  }[]
  concerns: { judge_id: string; concern: string }[]
  blocking_question: string | null
  blocking_reason: string | null
  divergence: { a: string; b: string; a_status: string; b_status: string } | null
  findings: {
    fingerprint: string
    severity: string
    title: string
    location: string | null
    reported_by: string[]
    models: string[]
    confidence: number
  }[]
  supersedes: string | null
  [key: string]: unknown
}

/** Decides and expects a manifest (200). */
export async function decide(
  t: TestApp,
  key: string,
  reviewId: string,
): Promise<{ manifest: ReviewManifest; manifest_digest: string; jws: string; audit_seq: number | null }> {
  const response = await postDecide(t, key, reviewId)
  assert.equal(response.statusCode, 200, response.body)
  return response.json()
}

export function postRevision(
  t: TestApp,
  key: string,
  reviewId: string,
  digest: string,
): Promise<LightMyRequestResponse> {
  return t.request(key, {
    method: 'POST',
    url: `/v1/reviews/${reviewId}/revisions`,
    payload: { subject: { digest, description: `revised to ${digest.slice(-4)}` } },
  })
}

export async function getReview(t: TestApp, key: string, reviewId: string): Promise<ReviewView> {
  const response = await t.request(key, { method: 'GET', url: `/v1/reviews/${reviewId}` })
  assert.equal(response.statusCode, 200, response.body)
  return response.json()
}

export interface ReviewTestSetup {
  app: TestApp
  /** Orchestrator key of orch-a, which owns the reviews the fixtures create. */
  a: string
  /** Orchestrator key of orch-b: reads every review, writes none of orch-a's. */
  b: string
}

/**
 * One app and database for a whole test file (an embedded database takes seconds to start), built on first use
 * and closed when the file ends. Tests stay independent: each creates its own reviews under fresh keys.
 */
export function sharedReviewApp(): () => Promise<ReviewTestSetup> {
  const cleanups: (() => unknown)[] = []
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
  })
  let setup: Promise<ReviewTestSetup> | undefined
  return () => {
    setup ??= (async () => {
      const app = await buildTestApp({ after: (fn) => void cleanups.push(fn as () => unknown) })
      return {
        app,
        a: await app.key('orchestrator', ['orch-a']),
        b: await app.key('orchestrator', ['orch-b']),
      }
    })()
    return setup
  }
}

/** Checks a manifest envelope as any client would: the JWS against the JWKS (jose), the digest over JCS. */
export async function assertSignedEnvelope(
  t: TestApp,
  envelope: { manifest: unknown; manifest_digest: string; jws: string },
): Promise<void> {
  const jwks = (await t.request(null, { method: 'GET', url: '/.well-known/jwks.json' })).json()
  const { payload } = await compactVerify(envelope.jws, createLocalJWKSet(jwks), {
    algorithms: ['Ed25519', 'EdDSA'],
  })
  assert.deepEqual(JSON.parse(new TextDecoder().decode(payload)), envelope.manifest)
  assert.equal(envelope.manifest_digest, clientHash(envelope.manifest))
}
