import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import { listOperations } from '../../src/http/openapi-document.ts'
import { buildTestApp } from '../helpers/app.ts'
import { createFanout, vantageBody } from '../helpers/fanout-fixtures.ts'
import { CRITERION, createOutcome } from '../helpers/fixtures.ts'
import { createReview } from '../helpers/review-fixtures.ts'

/**
 * The order of codes on every route whose path names a resource by id: 404 for an unknown id comes before 400
 * for the body, and before 403 for writing under another orchestrator's id. The routes are read from the OpenAPI
 * document, so a new route with a path id is walked without being listed here.
 */

/** A body no route accepts: every request schema is strict, so an unknown member is a 400. */
const BAD_BODY = { not_a_field: true }

/** Path parameters that are not a resource's id: a policy is PUT (created) under any sub-agent name. */
const NOT_AN_ID = new Set(['subagent_id'])

describe('404 for an unknown path id before the body is judged', () => {
  it('answers 404 on every route with a path id, for an unknown id and a bad body', async (t) => {
    const app = await buildTestApp(t)
    const operations = listOperations(app.app.swagger() as Record<string, unknown>)
      .map(({ key, operation }) => {
        const [method, path] = key.split(' ') as [string, string]
        return { method, path, hasBody: operation.requestBody !== undefined }
      })
      .filter(({ path }) => /\{[^}]+\}/.test(path))
    const walked: string[] = []
    for (const { method, path, hasBody } of operations) {
      const params = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!)
      if (params.some((param) => NOT_AN_ID.has(param))) continue
      const url = path.replace(/\{[^}]+\}/g, randomUUID())
      const response = await app.request(app.adminKey, {
        method: method as 'GET',
        url,
        ...(hasBody ? { payload: BAD_BODY } : {}),
      })
      assert.equal(response.statusCode, 404, `${method} ${path}: ${response.body}`)
      assert.match(String(response.headers['content-type']), /application\/problem\+json/)
      walked.push(`${method} ${path}`)
    }
    // The routes the problem was found on, and those that already kept the order, are all among those walked.
    for (const route of [
      'POST /v1/outcomes/{id}/evidence',
      'POST /v1/outcomes/{id}/interpretations',
      'POST /v1/outcomes/{id}/evaluate',
      'POST /v1/outcomes/{id}/resolution',
      'PUT /v1/probes/{id}',
      'POST /v1/probes/{id}/dry-run',
      'POST /v1/fanouts/{id}/results',
      'POST /v1/reviews/{id}/verdicts',
      'DELETE /v1/admin/keys/{id}',
    ]) {
      assert.ok(walked.includes(route), `${route} walked (${walked.join(', ')})`)
    }
  })

  it('answers 404 for an unknown id before 400 for a body that is not JSON or not I-JSON', async (t) => {
    const app = await buildTestApp(t)
    const orchestrator = await app.key('orchestrator', ['orch-a'])
    const outcome = await createOutcome(app, orchestrator)
    const bodies: [string, string, string][] = [
      ['not JSON', '{"evidence": [', 'application/json'],
      ['a duplicate member name', '{"evidence": [], "evidence": []}', 'application/json'],
      [
        'an integer beyond 2^53',
        '{"evidence": [{"kind": "n", "content": 9007199254740993}]}',
        'application/json',
      ],
      ['another charset', '{"evidence": []}', 'application/json; charset=latin1'],
    ]
    for (const [name, payload, contentType] of bodies) {
      const post = (id: string) =>
        app.request(app.adminKey, {
          method: 'POST',
          url: `/v1/outcomes/${id}/evidence`,
          payload,
          headers: { 'content-type': contentType },
        })
      const unknown = await post(randomUUID())
      assert.equal(unknown.statusCode, 404, `${name}: ${unknown.body}`)
      const known = await post(outcome.outcome_id)
      assert.equal(known.statusCode, 400, `${name}: ${known.body}`)
    }
  })

  it('answers 400 for the same bad body on a known id: the 404 above is the id, not the body', async (t) => {
    const app = await buildTestApp(t)
    const orchestrator = await app.key('orchestrator', ['orch-a', 'scout'])
    const outcome = await createOutcome(app, orchestrator)
    const fanout = await createFanout(app, orchestrator, vantageBody())
    const review = await createReview(app, orchestrator, 'two_stage')
    const probe = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/probes',
      payload: {
        name: 'ledger',
        request: { url: 'https://ledger.example.com/x' },
        predicate: { status: 200, pointer: '/state', map: { settled: 'success' } },
      },
    })
    assert.equal(probe.statusCode, 201, probe.body)
    const known: [string, string][] = [
      ['POST', `/v1/outcomes/${outcome.outcome_id}/evidence`],
      ['POST', `/v1/outcomes/${outcome.outcome_id}/interpretations`],
      ['POST', `/v1/outcomes/${outcome.outcome_id}/evaluate`],
      ['POST', `/v1/outcomes/${outcome.outcome_id}/resolution`],
      ['PUT', `/v1/probes/${probe.json().probe_id}`],
      ['POST', `/v1/probes/${probe.json().probe_id}/dry-run`],
      ['POST', `/v1/fanouts/${fanout.fanout_id}/results`],
      ['POST', `/v1/fanouts/${fanout.fanout_id}/reconcile`],
      ['POST', `/v1/fanouts/${fanout.fanout_id}/resolution`],
      ['POST', `/v1/reviews/${review.review_id}/verdicts`],
      ['POST', `/v1/reviews/${review.review_id}/revisions`],
      ['POST', `/v1/reviews/${review.review_id}/decide`],
    ]
    for (const [method, url] of known) {
      const response = await app.request(app.adminKey, { method: method as 'POST', url, payload: BAD_BODY })
      assert.equal(response.statusCode, 400, `${method} ${url}: ${response.body}`)
    }
  })

  it('answers 404 for an unknown outcome before 403 for an interpretation under another orchestrator', async (t) => {
    const app = await buildTestApp(t)
    const orchestrator = await app.key('orchestrator', ['orch-a'])
    const body = {
      orchestrator_id: 'orch-z',
      outcome_interpretation: 'success',
      success_criterion: CRITERION,
      intended_action: { kind: 'compensate', resources: ['refund:re_1'] },
    }
    const post = (outcomeId: string) =>
      app.request(orchestrator, {
        method: 'POST',
        url: `/v1/outcomes/${outcomeId}/interpretations`,
        payload: body,
      })
    assert.equal((await post(randomUUID())).statusCode, 404)
    const outcome = await createOutcome(app, orchestrator)
    const refused = await post(outcome.outcome_id)
    assert.equal(refused.statusCode, 403, refused.body)
  })

  it('answers 404 for an unknown probe before 400 for a probe URL the deployment refuses', async (t) => {
    const app = await buildTestApp(t, { config: { probeAllowPrivate: false } })
    const body = {
      name: 'inside',
      request: { url: 'http://127.0.0.1/x' },
      predicate: { status: 200, pointer: '/state', map: { settled: 'success' } },
    }
    const response = await app.request(app.adminKey, {
      method: 'PUT',
      url: `/v1/probes/${randomUUID()}`,
      payload: body,
    })
    assert.equal(response.statusCode, 404, response.body)
    const refused = await app.request(app.adminKey, { method: 'POST', url: '/v1/probes', payload: body })
    assert.equal(refused.statusCode, 400, refused.body)
  })
})
