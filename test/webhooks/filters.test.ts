import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { haltedFanout } from '../helpers/fanout-fixtures.ts'
import { createOutcome, evaluate, haltedOutcome, interpret } from '../helpers/fixtures.ts'
import { createReview, decide, judge, verdict } from '../helpers/review-fixtures.ts'

interface Delivery {
  event_id: string
  type: string
}

/** The manifest ids of the events a webhook got, read from the database through its deliveries. */
async function manifestsOf(t: TestApp, webhookId: string): Promise<string[]> {
  const response = await t.request(t.adminKey, { method: 'GET', url: `/v1/webhooks/${webhookId}/deliveries` })
  assert.equal(response.statusCode, 200, response.body)
  const items = response.json().items as Delivery[]
  if (items.length === 0) return []
  const { rows } = await t.app.db.query<{ manifest_id: string }>(
    'SELECT manifest_id FROM webhook_events WHERE id = ANY ($1::uuid[]) ORDER BY created_at',
    [items.map((item) => item.event_id)],
  )
  return rows.map((row) => row.manifest_id).sort()
}

async function register(t: TestApp, filter: Record<string, string>, events = ['manifest.issued']) {
  const response = await t.request(t.adminKey, {
    method: 'POST',
    url: '/v1/webhooks',
    // Never delivered in this file (deliver: false): only which deliveries are stored is looked at.
    payload: { url: 'https://hooks.example.com/arbiter', events, filter },
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().webhook_id as string
}

describe('filters', () => {
  it('gives an orchestrator_id filter exactly the manifests of the cases it takes part in, for every kind', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: { deliver: false } } })
    const hooks = {
      a: await register(app, { orchestrator_id: 'orch-a' }),
      b: await register(app, { orchestrator_id: 'orch-b' }),
      expectedOnly: await register(app, { orchestrator_id: 'orch-silent' }),
      scout: await register(app, { orchestrator_id: 'scout' }),
      reviewer: await register(app, { orchestrator_id: 'orch-r' }),
      nobody: await register(app, { orchestrator_id: 'orch-none' }),
      reviews: await register(app, { kind: 'review' }),
      halts: await register(app, { directive: 'HALT' }),
      everything: await register(app, {}),
    }
    const a = await app.key('orchestrator', ['orch-a'])
    const b = await app.key('orchestrator', ['orch-b'])
    const scout = await app.key('orchestrator', ['scout'])
    const r = await app.key('orchestrator', ['orch-r'])
    // An outcome orch-a interprets alone, orch-silent being expected too (it never answers; the deadline decides).
    const agreed = await createOutcome(app, a, {
      expected_orchestrators: ['orch-a', 'orch-silent'],
      deadline: new Date(Date.now() + 1500).toISOString(),
    })
    await interpret(app, a, agreed.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    let single: { manifest: { manifest_id: string } } | undefined
    while (single === undefined) {
      const response = await app.request(a, {
        method: 'POST',
        url: `/v1/outcomes/${agreed.outcome_id}/evaluate`,
      })
      if (response.statusCode === 200) single = response.json()
      else await new Promise((resolve) => setTimeout(resolve, 100))
    }
    // An outcome orch-a and orch-b disagree on: HALT, then a human resolution.
    const { outcome: halted, envelope: halt } = await haltedOutcome(app, a, b)
    const ops = await app.key('ops')
    const resolution = await app.request(ops, {
      method: 'POST',
      url: `/v1/outcomes/${halted.outcome_id}/resolution`,
      payload: { outcome: 'success', rationale: 'checked', action_owner: 'orch-b' },
    })
    assert.equal(resolution.statusCode, 201, resolution.body)
    const resolved = resolution.json()
    // A fan-out owned by scout, and a review owned by orch-r.
    const { envelope: fanout } = await haltedFanout(app, scout)
    const review = await createReview(app, r, 'do_and_judge', { orchestrator_id: 'orch-r' })
    await judge(app, r, review.review_id, verdict('solo', 'DONE'))
    const reviewed = await decide(app, r, review.review_id)

    const ids = (...envelopes: { manifest: { manifest_id: string } }[]) =>
      envelopes.map((envelope) => envelope.manifest.manifest_id).sort()
    assert.deepEqual(await manifestsOf(app, hooks.a), ids(single, halt, resolved))
    assert.deepEqual(await manifestsOf(app, hooks.b), ids(halt, resolved))
    assert.deepEqual(await manifestsOf(app, hooks.expectedOnly), ids(single))
    assert.deepEqual(await manifestsOf(app, hooks.scout), ids(fanout))
    assert.deepEqual(await manifestsOf(app, hooks.reviewer), ids(reviewed))
    assert.deepEqual(await manifestsOf(app, hooks.nobody), [])
    assert.deepEqual(await manifestsOf(app, hooks.reviews), ids(reviewed))
    assert.deepEqual(await manifestsOf(app, hooks.halts), ids(halt, fanout))
    assert.deepEqual(await manifestsOf(app, hooks.everything), ids(single, halt, resolved, fanout, reviewed))
  })

  it('filters escalation events on the HALT, and sends them only to webhooks that subscribe to them', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: { deliver: false } } })
    const opened = await register(app, { orchestrator_id: 'orch-b' }, ['escalation.opened'])
    const both = await register(app, { kind: 'outcome' }, ['escalation.opened', 'escalation.resolved'])
    const scoutOnly = await register(app, { orchestrator_id: 'scout' }, ['escalation.opened'])
    const a = await app.key('orchestrator', ['orch-a'])
    const b = await app.key('orchestrator', ['orch-b'])
    const { outcome, envelope: halt } = await haltedOutcome(app, a, b)
    const ops = await app.key('ops')
    await app.request(ops, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/resolution`,
      payload: { outcome: 'failure', rationale: 'checked' },
    })
    const types = async (id: string) =>
      (await app.request(app.adminKey, { method: 'GET', url: `/v1/webhooks/${id}/deliveries` }))
        .json()
        .items.map((item: Delivery) => item.type)
    assert.deepEqual(await types(opened), ['escalation.opened'])
    assert.deepEqual(await types(both), ['escalation.resolved', 'escalation.opened'])
    assert.deepEqual(await types(scoutOnly), [])
    assert.deepEqual(await manifestsOf(app, both), [halt.manifest.manifest_id, halt.manifest.manifest_id])
    // A decision nobody subscribes to stores no event at all.
    const quiet = await createOutcome(app, a, { expected_orchestrators: ['orch-a'] })
    await interpret(app, a, quiet.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    await evaluate(app, a, quiet.outcome_id)
    const { rows } = await app.app.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM webhook_events WHERE type = 'manifest.issued'",
    )
    assert.equal(rows[0]!.n, 0)
  })

  it('links an orchestrator to a manifest through its action_owner alone', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: { deliver: false } } })
    const a = await app.key('orchestrator', ['orch-a'])
    const b = await app.key('orchestrator', ['orch-b'])
    const { outcome } = await haltedOutcome(app, a, b)
    const ops = await app.key('ops')
    const resolution = await app.request(ops, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/resolution`,
      payload: { outcome: 'success', rationale: 'checked', action_owner: 'orch-b' },
    })
    assert.equal(resolution.statusCode, 201, resolution.body)
    const resolved: string = resolution.json().manifest.manifest_id
    // The API takes an action_owner only among an outcome's expected or interpreting orchestrators, so the
    // manifest is asked about under a case nobody takes part in: its action_owner is then the only link.
    const takesPart = async (orchestrator: string) => {
      const { rows } = await app.app.db.query<{ yes: boolean }>(
        'SELECT webhook_takes_part($1, gen_random_uuid(), $2, $3) AS yes',
        ['outcome', resolved, orchestrator],
      )
      return rows[0]!.yes
    }
    assert.equal(await takesPart('orch-b'), true)
    assert.equal(await takesPart('orch-a'), false)
  })
})
