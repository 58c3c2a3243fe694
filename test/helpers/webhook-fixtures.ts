import assert from 'node:assert/strict'
import type { TestApp } from './app.ts'
import { createOutcome, evaluate, interpret } from './fixtures.ts'

/** Registers a webhook (as admin) and answers it as created, with its secret. */
export async function registerWebhook(
  t: TestApp,
  body: { url: string; events?: string[]; [member: string]: unknown },
): Promise<{ webhook_id: string; secret: string }> {
  const response = await t.request(t.adminKey, {
    method: 'POST',
    url: '/v1/webhooks',
    payload: { events: ['manifest.issued'], ...body },
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json()
}

/** Disables a webhook, or enables it again (as admin). */
export async function setWebhookDisabled(t: TestApp, webhookId: string, disabled: boolean): Promise<void> {
  const response = await t.request(t.adminKey, {
    method: 'PATCH',
    url: `/v1/webhooks/${webhookId}`,
    payload: { disabled },
  })
  assert.equal(response.statusCode, 200, response.body)
}

/** An agreed outcome with its one interpretation, not yet evaluated; answers its id. */
export async function interpretedOutcome(t: TestApp, key: string): Promise<string> {
  const outcome = await createOutcome(t, key, { expected_orchestrators: ['orch-a'] })
  await interpret(t, key, outcome.outcome_id, {
    orchestrator_id: 'orch-a',
    outcome_interpretation: 'success',
  })
  return outcome.outcome_id
}

/** One agreed outcome decided by an orchestrator key of orch-a: one manifest.issued event. */
export async function decideOne(t: TestApp, key: string) {
  return evaluate(t, key, await interpretedOutcome(t, key))
}
