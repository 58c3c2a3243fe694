import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, it } from 'node:test'
import { OPENAPI_FILE, renderOpenApi } from '../../src/openapi-write.ts'
import { buildTestApp } from '../helpers/app.ts'

function assertProblem(
  response: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
) {
  assert.equal(response.statusCode, status, response.body)
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/)
  const problem = JSON.parse(response.body)
  assert.equal(problem.status, status)
  assert.equal(typeof problem.type, 'string')
  assert.equal(typeof problem.title, 'string')
  assert.equal(typeof problem.detail, 'string')
  assert.doesNotMatch(response.body, /at .*\.ts:\d+|SELECT|INSERT/, 'no stack traces or SQL in responses')
  return problem
}

describe('HTTP conventions', async () => {
  it('answers errors as RFC 9457 problem+json', async (t) => {
    const { request, adminKey } = await buildTestApp(t)
    const post = (
      payload: string,
      headers: Record<string, string> = { 'content-type': 'application/json' },
    ) => request(adminKey, { method: 'POST', url: '/v1/admin/keys', payload, headers })

    assertProblem(await post('{"role":'), 400)
    const unknownField = assertProblem(await post('{"role":"admin","label":"x","extra":1}'), 400)
    assert.deepEqual(unknownField.errors, [{ path: 'body/extra', message: 'unknown field' }])
    const wrongType = assertProblem(await post('{"role":"wizard","label":"x"}'), 400)
    assert.equal(wrongType.errors[0].path, 'body/role')
    assertProblem(await post('{"__proto__":{"x":1},"role":"admin","label":"x"}'), 400)
    assertProblem(await post('{"role":"admin","label":"x"}', { 'content-type': 'text/plain' }), 415)
    assertProblem(await post(JSON.stringify({ role: 'admin', label: 'x'.repeat(2 * 1024 * 1024) })), 413)
    assertProblem(await request(adminKey, { method: 'GET', url: '/v1/nothing-here' }), 404)
    assertProblem(await request(adminKey, { method: 'DELETE', url: '/v1/admin/keys/not-a-uuid' }), 400)
    assertProblem(
      await request(adminKey, {
        method: 'DELETE',
        url: '/v1/admin/keys/00000000-0000-4000-8000-000000000000',
      }),
      404,
    )
    assertProblem(await request(adminKey, { method: 'GET', url: '/v1/admin/keys?cursor=%%%' }), 400)
    assertProblem(await request(adminKey, { method: 'GET', url: '/v1/admin/keys?limit=0' }), 400)
  })

  it('names every answer with a request id of its own, never the one a client sent', async (t) => {
    const { request } = await buildTestApp(t)
    const given = await request(null, {
      method: 'GET',
      url: '/healthz',
      headers: { 'x-request-id': 'abc-123' },
    })
    assert.match(String(given.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    const assigned = await request(null, { method: 'GET', url: '/healthz' })
    assert.match(String(assigned.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    assert.notEqual(given.headers['x-request-id'], assigned.headers['x-request-id'])
  })

  it('answers a known path with another method 405 and an Allow header, an unknown path 404', async (t) => {
    const { request, adminKey } = await buildTestApp(t)
    for (const key of [adminKey, null]) {
      const collection = await request(key, { method: 'DELETE', url: '/v1/outcomes' })
      assertProblem(collection, 405)
      assert.equal(collection.headers.allow, 'GET, HEAD, POST')
      const health = await request(key, { method: 'POST', url: '/healthz?x=1' })
      assertProblem(health, 405)
      assert.equal(health.headers.allow, 'GET, HEAD')
      // A path with a parameter, spelled with a %-escape, is the same path.
      const one = await request(key, {
        method: 'PATCH',
        url: '/v1/admin/key%73/00000000-0000-4000-8000-000000000000',
      })
      assertProblem(one, 405)
      assert.match(String(one.headers.allow), /\bDELETE\b/)
      const unknown = await request(key, { method: 'DELETE', url: '/v1/nothing-here' })
      assertProblem(unknown, 404)
      assert.equal(unknown.headers.allow, undefined)
    }
  })

  it('reads query integers as plain decimal only, naming the parameter otherwise', async (t) => {
    const { request, adminKey } = await buildTestApp(t)
    const cases: [string, string][] = [
      ['/v1/audit/verify?from_seq=0x10', 'from_seq'],
      ['/v1/audit/verify?to_seq=1e2', 'to_seq'],
      ['/v1/audit/verify?from_seq=%2B1', 'from_seq'],
      ['/v1/audit/proofs/inclusion?seq=-1', 'seq'],
      ['/v1/audit/proofs/inclusion?seq=1&tree_size=010', 'tree_size'],
      ['/v1/audit/proofs/consistency?from_size=1&to_size=%202', 'to_size'],
      ['/v1/admin/keys?limit=010', 'limit'],
      ['/v1/admin/keys?limit=%2B5', 'limit'],
      ['/v1/admin/keys?limit=1e2', 'limit'],
      ['/v1/admin/keys?limit=5%20', 'limit'],
      ['/v1/outcomes?limit=0x10', 'limit'],
      ['/v1/manifests?limit=5.0', 'limit'],
    ]
    for (const [url, name] of cases) {
      const problem = assertProblem(await request(adminKey, { method: 'GET', url }), 400)
      assert.ok(
        problem.errors?.some((e: { path: string }) => e.path === `querystring/${name}`),
        `${url}: ${JSON.stringify(problem)}`,
      )
    }
    const fine = await request(adminKey, { method: 'GET', url: '/v1/admin/keys?limit=100000000000000000000' })
    assert.equal(fine.statusCode, 200, 'a huge limit is clamped')
    // A seq or size past any log and past 2^63 reaches no database error: an answer about the log as it is.
    const huge = '9'.repeat(45)
    for (const url of [
      `/v1/audit/verify?from_seq=99999999999999999999`,
      `/v1/audit/verify?from_seq=${huge}`,
      `/v1/audit/verify?to_seq=${huge}`,
      `/v1/audit/records?from_seq=${huge}`,
      `/v1/audit/proofs/inclusion?seq=${huge}`,
      `/v1/audit/proofs/inclusion?seq=1&tree_size=${huge}`,
      `/v1/audit/proofs/consistency?from_size=1&to_size=${huge}`,
    ]) {
      const answer = await request(adminKey, { method: 'GET', url })
      assert.ok(answer.statusCode < 500, `${url}: ${answer.statusCode} ${answer.body}`)
    }
  })

  it('serves health, readiness, metrics, the OpenAPI document and the docs without a key', async (t) => {
    const { request } = await buildTestApp(t)
    assert.deepEqual((await request(null, { method: 'GET', url: '/healthz' })).json(), { status: 'ok' })
    assert.deepEqual((await request(null, { method: 'GET', url: '/readyz' })).json(), { status: 'ready' })
    const metrics = await request(null, { method: 'GET', url: '/metrics' })
    assert.equal(metrics.statusCode, 200)
    assert.match(metrics.body, /process_cpu_user_seconds_total/)
    assert.match(
      metrics.body,
      /arbiter_http_request_duration_seconds_bucket\{[^}]*route="\/readyz"[^}]*status_code="200"/,
    )
    assert.match(metrics.body, /arbiter_db_pool_connections\{state="total"\}/)
    const openapi = await request(null, { method: 'GET', url: '/openapi.json' })
    assert.equal(openapi.json().openapi, '3.1.0')
    assert.equal((await request(null, { method: 'GET', url: '/docs' })).statusCode < 400, true)
  })

  it('counts what the audit sequencer places in the log, its lag, and whether this replica holds its lease', async (t) => {
    const { request, adminKey } = await buildTestApp(t)
    const metricValue = (body: string, name: string) => {
      const line = body.split('\n').find((l) => l.startsWith(`${name} `))
      return line === undefined ? undefined : Number(line.slice(name.length + 1))
    }
    const before = (await request(null, { method: 'GET', url: '/metrics' })).body
    const sequencedBefore = metricValue(before, 'arbiter_audit_records_sequenced_total') ?? 0
    for (const label of ['a', 'b', 'c']) {
      const created = await request(adminKey, {
        method: 'POST',
        url: '/v1/admin/keys',
        payload: { role: 'dashboard', label },
      })
      assert.equal(created.statusCode, 201)
    }
    // An audit read answers once its reader's writes are in the log: the three records are sequenced by then.
    assert.equal((await request(adminKey, { method: 'GET', url: '/v1/audit/records' })).statusCode, 200)
    const after = (await request(null, { method: 'GET', url: '/metrics' })).body
    assert.equal(metricValue(after, 'arbiter_audit_sequencer_leader'), 1)
    const sequenced = metricValue(after, 'arbiter_audit_records_sequenced_total')
    assert.ok(sequenced !== undefined && sequenced >= sequencedBefore + 3, `sequenced ${sequenced}`)
    // One lag observation per record sequenced.
    assert.equal(metricValue(after, 'arbiter_audit_sequencing_lag_seconds_count'), sequenced)
  })

  it('keeps openapi/openapi.json identical to what the routes produce (run `npm run openapi`)', async (t) => {
    const { app } = await buildTestApp(t)
    const committed = await readFile(OPENAPI_FILE, 'utf8')
    assert.equal(committed, renderOpenApi(app), 'openapi/openapi.json drifted from the route schemas')
  })

  it('limits requests per key with 429 and Retry-After', async (t) => {
    const { request, adminKey, key } = await buildTestApp(t, { config: { rateLimitPerMinute: 3 } })
    const statuses: number[] = []
    let last: Awaited<ReturnType<typeof request>> | undefined
    for (let i = 0; i < 4; i++) {
      last = await request(adminKey, { method: 'GET', url: '/v1/admin/keys' })
      statuses.push(last.statusCode)
    }
    assert.deepEqual(statuses, [200, 200, 200, 429])
    assertProblem(last!, 429)
    assert.ok(Number(last!.headers['retry-after']) > 0)
    const other = await key('admin')
    assert.equal((await request(other, { method: 'GET', url: '/v1/admin/keys' })).statusCode, 200, 'per key')
  })
})
