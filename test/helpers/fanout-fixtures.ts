import assert from 'node:assert/strict'
import type { TestApp } from './app.ts'
import { uniqueRun } from './fixtures.ts'

/**
 * Fan-out fixtures over HTTP: the Vantage example (docs/fanouts.md) — two workers, one fact, the same $60k
 * floor six weeks apart, the carve-out "new logos only" on one side — and small helpers that assert the status.
 */

export const FLOOR = 'vantage.enterprise.floor'
export const PARTNER_DISCOUNT = 'vantage.partner.discount'
export const SIXTY_K = { amount: 60000, currency: 'USD', per: 'year' }

export interface FanoutBody {
  orchestrator_id: string
  fanout_key: string
  question: string
  facts: string[]
  subtasks: { subtask_id: string; scope?: string | null; facts: string[] }[]
  deadline?: string | null
  policy?: Record<string, unknown>
}

/** The Vantage fan-out: st_3 reads archived pricing pages, st_5 CRM notes; both own the floor. */
export function vantageBody(overrides: Partial<FanoutBody> = {}): FanoutBody {
  return {
    orchestrator_id: 'scout',
    fanout_key: uniqueRun('vantage'),
    question: 'How did Vantage change enterprise pricing over the last 18 months?',
    facts: [FLOOR],
    subtasks: [
      { subtask_id: 'st_3', scope: 'archived pricing pages, vantage.com', facts: [FLOOR] },
      { subtask_id: 'st_5', scope: 'CRM call notes, competitive-loss field', facts: [FLOOR] },
    ],
    ...overrides,
  }
}

/** st_3's return: the archived pricing page, effective 1 March 2025, no qualifiers. */
export const ST3_RESULT = {
  subtask_id: 'st_3',
  status: 'DONE',
  summary: 'Archived pricing page shows a $60k enterprise floor from March 2025.',
  evidence: ['web.archive.org capture 2025-03-04'],
  claims: [
    {
      fact: FLOOR,
      value: SIXTY_K,
      effective_date: '2025-03-01',
      confidence: 0.81,
      sources: [
        {
          uri: 'https://vantage.com/pricing',
          excerpt: "capture 2025-03-04: 'Enterprise — from $60,000/yr'",
          observed_at: '2025-03-04T09:12:00Z',
        },
      ],
    },
  ],
}

/** st_5's return, exactly as the contract shows it: six weeks earlier, new logos only. */
export const ST5_RESULT = {
  subtask_id: 'st_5',
  status: 'DONE',
  summary: 'CRM notes show the new floor applies to new logos only.',
  evidence: ['opp 118204 note'],
  claims: [
    {
      fact: FLOOR,
      value: SIXTY_K,
      effective_date: '2025-01-22',
      qualifiers: { applies_to: 'new_logos' },
      confidence: 0.66,
      sources: [{ uri: 'crm://opp/118204', excerpt: 'their AE confirmed 60k floor, new business only' }],
    },
  ],
  worker: { model: 'model-x', context_id: 'ctx-5' },
}

export function needsContext(subtask_id: string, question = 'Which CRM field is authoritative?') {
  return { subtask_id, status: 'NEEDS_CONTEXT', summary: 'Two fields disagree.', blocking_question: question }
}

export function blocked(subtask_id: string, reason = 'the CRM export is down') {
  return { subtask_id, status: 'BLOCKED', summary: 'Could not read the CRM.', blocking_reason: reason }
}

/** A DONE return claiming `value` for each fact, citing one source per claim. */
export function doneWith(subtask_id: string, claims: { fact: string; value: unknown; uri?: string }[]) {
  return {
    subtask_id,
    status: 'DONE',
    summary: `${subtask_id} finished`,
    evidence: [`${subtask_id} notes`],
    claims: claims.map(({ fact, value, uri }) => ({
      fact,
      value,
      sources: [{ uri: uri ?? `https://example.com/${subtask_id}/${fact}` }],
    })),
  }
}

export async function createFanout(t: TestApp, key: string, body: FanoutBody, status = 201) {
  const response = await t.request(key, { method: 'POST', url: '/v1/fanouts', payload: body })
  assert.equal(response.statusCode, status, response.body)
  return response.json()
}

export async function submitResult(t: TestApp, key: string, fanoutId: string, body: unknown, status = 201) {
  const response = await t.request(key, {
    method: 'POST',
    url: `/v1/fanouts/${fanoutId}/results`,
    payload: body as object,
  })
  assert.equal(response.statusCode, status, response.body)
  return response.json()
}

export async function reconcileFanout(
  t: TestApp,
  key: string,
  fanoutId: string,
  status = 200,
  body?: Record<string, unknown>,
) {
  const response = await t.request(key, {
    method: 'POST',
    url: `/v1/fanouts/${fanoutId}/reconcile`,
    ...(body === undefined ? {} : { payload: body }),
  })
  assert.equal(response.statusCode, status, response.body)
  return response.json()
}

/** A Vantage fan-out with both results in, reconciled: CONTESTED + HALT under the default policy. */
export async function haltedFanout(t: TestApp, key: string, overrides: Partial<FanoutBody> = {}) {
  const fanout = await createFanout(t, key, vantageBody(overrides))
  await submitResult(t, key, fanout.fanout_id, ST3_RESULT)
  await submitResult(t, key, fanout.fanout_id, ST5_RESULT)
  const envelope = await reconcileFanout(t, key, fanout.fanout_id)
  assert.equal(envelope.manifest.directive, 'HALT')
  return { fanout, envelope, manifest: envelope.manifest }
}
