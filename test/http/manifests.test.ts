import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'
import { createOutcome, disputedOutcome, evaluate, interpret } from '../helpers/fixtures.ts'

describe('GET /v1/manifests', () => {
  it('filters by kind, subagent, case, verdict, directive and time, in log order, with cursor pages', async (t) => {
    const app = await buildTestApp(t)
    const a = await app.key('orchestrator', ['orch-a'])
    const b = await app.key('orchestrator', ['orch-b'])
    const ids: string[] = []
    for (const subagent of ['alpha', 'alpha', 'beta']) {
      const outcome = await createOutcome(app, a, { subagent_id: subagent })
      await interpret(app, a, outcome.outcome_id, {
        orchestrator_id: 'orch-a',
        outcome_interpretation: 'success',
      })
      ids.push((await evaluate(app, a, outcome.outcome_id)).manifest.manifest_id)
    }
    const halted = await disputedOutcome(app, a, b, {
      outcome: { subagent_id: 'beta' },
      orchB: { success_criterion: { other: 1 } },
    })
    const halt = (await evaluate(app, a, halted.outcome_id)).manifest
    const list = async (query: string) =>
      (await app.request(a, { method: 'GET', url: `/v1/manifests?${query}` })).json()
    const idsOf = (page: { items: { manifest: { manifest_id: string } }[] }) =>
      page.items.map((e) => e.manifest.manifest_id)

    assert.deepEqual(idsOf(await list('')), [...ids, halt.manifest_id])
    assert.deepEqual(idsOf(await list('subagent_id=alpha')), ids.slice(0, 2))
    assert.deepEqual(idsOf(await list(`outcome_id=${halted.outcome_id}`)), [halt.manifest_id])
    assert.deepEqual(idsOf(await list('verdict=CRITERIA_DIFFER')), [halt.manifest_id])
    assert.deepEqual(idsOf(await list('directive=PROCEED')), ids)
    assert.deepEqual(idsOf(await list(`since=${encodeURIComponent(halt.issued_at)}`)), [halt.manifest_id])
    assert.deepEqual(await list('since=2999-01-01T00:00:00Z'), { items: [], next_cursor: null })

    const page1 = await list('limit=3')
    assert.equal(page1.items.length, 3)
    const page2 = await list(`limit=3&cursor=${page1.next_cursor}`)
    assert.deepEqual(idsOf(page2), [halt.manifest_id])
    assert.equal(page2.next_cursor, null)
    assert.equal((await list('limit=100000000000000000000000')).items.length, 4, 'huge limits are clamped')
    for (const limit of ['0001', '0000', '+1', '0x10', '1e2', ' 1']) {
      const refused = await app.request(a, {
        method: 'GET',
        url: `/v1/manifests?limit=${encodeURIComponent(limit)}`,
      })
      assert.equal(refused.statusCode, 400, `limit=${limit} is not plain decimal`)
      assert.equal(refused.json().errors[0].path, 'querystring/limit')
    }

    const bad = await app.request(a, { method: 'GET', url: '/v1/manifests?verdict=MAYBE' })
    assert.equal(bad.statusCode, 400)

    // Every kind's manifests share the feed: `kind` and the case ids of other kinds filter it.
    assert.deepEqual(idsOf(await list('kind=outcome')), [...ids, halt.manifest_id])
    assert.deepEqual(await list('kind=review'), { items: [], next_cursor: null })
    assert.deepEqual(await list(`fanout_id=${halted.outcome_id}`), { items: [], next_cursor: null })
    assert.deepEqual(await list(`review_id=${crypto.randomUUID()}`), { items: [], next_cursor: null })
    assert.deepEqual(
      await list(`outcome_id=${halted.outcome_id}&fanout_id=${crypto.randomUUID()}`),
      { items: [], next_cursor: null },
      'a manifest belongs to one case',
    )
    const unknownKind = await app.request(a, { method: 'GET', url: '/v1/manifests?kind=verdict' })
    assert.equal(unknownKind.statusCode, 400)
    assert.equal(unknownKind.json().errors[0].path, 'querystring/kind')
    for (const envelope of (await list('')).items) {
      assert.equal(envelope.manifest.kind, 'outcome')
      assert.equal(typeof envelope.audit_seq, 'number')
    }
    const nul = await app.request(a, { method: 'GET', url: '/v1/manifests?subagent_id=a%00b' })
    assert.equal(nul.statusCode, 400)
    const offset = await app.request(a, {
      method: 'GET',
      url: '/v1/manifests?since=9999-12-31T23:59:59-23:59',
    })
    assert.equal(offset.statusCode, 400)
    const missing = await app.request(a, { method: 'GET', url: `/v1/manifests/${crypto.randomUUID()}` })
    assert.equal(missing.statusCode, 404)
    const one = await app.request(a, { method: 'GET', url: `/v1/manifests/${halt.manifest_id}` })
    assert.match(String(one.headers['content-type']), /^application\/json/)
    assert.equal(one.json().manifest.manifest_id, halt.manifest_id)
    // One manifest read alone and in a list: the same envelope, byte for byte.
    const listed = await app.request(a, {
      method: 'GET',
      url: `/v1/manifests?outcome_id=${halted.outcome_id}`,
    })
    assert.equal(listed.body, `{"items":[${one.body}],"next_cursor":null}`)
    const first = await app.request(a, { method: 'GET', url: `/v1/manifests/${ids[0]}` })
    assert.deepEqual(first.json().manifest, (await list('')).items[0].manifest)
  })

  it('rejects numbers JCS cannot represent with 400', async (t) => {
    const app = await buildTestApp(t)
    const response = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/outcomes',
      headers: { 'content-type': 'application/json' },
      payload: '{"subagent_id":"s","run_id":"r","evidence":[{"kind":"other","content":1e400}]}',
    })
    assert.equal(response.statusCode, 400, response.body)
    assert.equal(response.json().errors[0].path, 'body/evidence/0/content')
    const { rows } = await app.app.db.query('SELECT count(*)::int AS n FROM outcomes')
    assert.equal(rows[0].n, 0)
  })
})
