import assert from 'node:assert/strict'
import pg from 'pg'
import { typeParsers } from '../../src/db/pool.ts'
import type { TestApp } from './app.ts'
import { createOutcome, evaluate, interpret } from './fixtures.ts'

/** Registers a webhook for `manifest.issued` at `url`. */
export async function registerWebhook(t: TestApp, url: string): Promise<{ webhook_id: string }> {
  const response = await t.request(t.adminKey, {
    method: 'POST',
    url: '/v1/webhooks',
    payload: { url, events: ['manifest.issued'] },
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json() as { webhook_id: string }
}

/** Decides `times` outcomes that orch-a alone expects and agrees with: one manifest each. */
export async function decideAgreed(t: TestApp, key: string, times = 1): Promise<void> {
  for (let i = 0; i < times; i++) {
    const outcome = await createOutcome(t, key, { expected_orchestrators: ['orch-a'] })
    await interpret(t, key, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    await evaluate(t, key, outcome.outcome_id)
  }
}

/** The rows of one statement, on a connection of its own (beside the app's pools). */
export async function sqlRows<R extends pg.QueryResultRow>(
  connectionString: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ connectionString, types: typeParsers })
  await client.connect()
  try {
    return (await client.query<R>(text, values)).rows
  } finally {
    await client.end()
  }
}

/** Polls until `check` holds (tests wait for the worker, never for a fixed time). */
export async function eventually(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 25))
}
