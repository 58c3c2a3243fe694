import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { json, startTarget } from '../helpers/http-target.ts'

/**
 * What registration (POST and PUT /v1/probes) refuses with 400, naming the field: templates anywhere an
 * outcome could steer where a probe and its admin's secrets go, header variables Arbiter reserves, and
 * loopback names unless private addresses are allowed. And what a dry run reports for the secrets and
 * params it cannot use.
 */

const cleanups: Array<() => unknown> = []
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})
const suite = { after: (fn: () => unknown) => void cleanups.push(fn) } as Parameters<typeof buildTestApp>[0]

let strict: TestApp
let permissive: TestApp
before(async () => {
  strict = await buildTestApp(suite, { config: { probeAllowPrivate: false } })
  permissive = await buildTestApp(suite, { config: { probeAllowPrivate: true, probeEnv: {} } })
})

function probeBody(request: Record<string, unknown>) {
  return {
    name: 'ledger-refund-settled',
    request: { url: 'https://ledger.example.com/refunds/{{params.refund_id}}', ...request },
    predicate: { status: 200, pointer: '/state', map: { settled: 'success' } },
  }
}

/** POSTs and PUTs `body` (PUT onto a probe that stays at version 1) and expects a 400 naming `path`. */
async function expectRefused(app: TestApp, body: object, path: string, message: RegExp) {
  const existing = await app.request(app.adminKey, {
    method: 'POST',
    url: '/v1/probes',
    payload: probeBody({}),
  })
  assert.equal(existing.statusCode, 201, existing.body)
  const id = existing.json().probe_id
  for (const [method, url] of [
    ['POST', '/v1/probes'],
    ['PUT', `/v1/probes/${id}`],
  ] as const) {
    const response = await app.request(app.adminKey, { method, url, payload: body })
    assert.equal(response.statusCode, 400, `${method} ${JSON.stringify(body)}: ${response.body}`)
    const problem = response.json()
    assert.equal(problem.errors[0].path, path, `${method}: ${response.body}`)
    assert.match(problem.errors[0].message, message, `${method}: ${response.body}`)
    assert.match(problem.detail, message)
  }
  const unchanged = await app.request(app.adminKey, { method: 'GET', url: `/v1/probes/${id}` })
  assert.equal(unchanged.json().version, 1)
}

describe('probe registration', () => {
  it('refuses a template outside the url path and query, on POST and PUT, naming the part', async () => {
    for (const [url, part] of [
      ['http://{{params.h}}:8080/refunds', 'host'],
      ['https://{{params.region}}.ledger.example.com/', 'host'],
      ['https://ledger.example.com:{{params.port}}/', 'port'],
      ['https://{{params.user}}@ledger.example.com/', 'userinfo'],
      ['{{params.scheme}}://ledger.example.com/', 'scheme'],
      ['https://ledger.example.com/x#{{params.f}}', 'fragment'],
    ] as const) {
      await expectRefused(
        permissive,
        probeBody({ url }),
        'body/request/url',
        new RegExp(`templates are allowed only in the url's path and query, not in its ${part}`),
      )
    }
  })

  it('refuses a template in a header, naming the header', async () => {
    await expectRefused(
      permissive,
      probeBody({ headers: { 'x-tenant': '{{params.tenant}}' } }),
      'body/request/headers/x-tenant',
      /templates are allowed only in the url's path and query, not in headers/,
    )
  })

  it('refuses a header reading a variable Arbiter reserves, saying why', async () => {
    for (const name of ['ARBITER_PROBE_ALLOW_PRIVATE', 'ARBITER_SIGNING_KEY', 'DATABASE_URL', 'PGPASSWORD']) {
      await expectRefused(
        permissive,
        probeBody({ headers: { authorization: { env: name } } }),
        'body/request/headers/authorization/env',
        /env names a variable Arbiter reserves \(ARBITER_\*, OTEL_\*, DATABASE_URL .*PG\*\)/,
      )
    }
  })

  it('refuses loopback names like 127.0.0.1, saying how to allow them, unless private addresses are allowed', async () => {
    for (const host of ['localhost', 'localhost.', 'LOCALHOST', 'api.localhost', 'api.localhost.']) {
      const body = probeBody({ url: `http://${host}:8080/refunds/{{params.refund_id}}` })
      await expectRefused(
        strict,
        body,
        'body/request/url',
        /loopback name .*ARBITER_PROBE_ALLOW_PRIVATE=true .*ARBITER_PROBE_ALLOWED_HOSTS/,
      )
      const allowed = await permissive.request(permissive.adminKey, {
        method: 'POST',
        url: '/v1/probes',
        payload: body,
      })
      assert.equal(allowed.statusCode, 201, `${host}: ${allowed.body}`)
    }
  })
})

describe('probe dry runs', () => {
  it('reach a trailing-dot loopback name when private addresses are allowed', async (t) => {
    const target = await startTarget(t, (_req, res) => json(res, 200, { state: 'settled' }))
    const port = new URL(target.url).port
    const probe = await permissive.request(permissive.adminKey, {
      method: 'POST',
      url: '/v1/probes',
      payload: probeBody({ url: `http://localhost.:${port}/refunds/{{params.refund_id}}` }),
    })
    assert.equal(probe.statusCode, 201, probe.body)
    const run = await permissive.request(permissive.adminKey, {
      method: 'POST',
      url: `/v1/probes/${probe.json().probe_id}/dry-run`,
      payload: { params: { refund_id: 're_1' } },
    })
    assert.equal(run.json().error, null, run.body)
    assert.equal(run.json().result, 'success')
    assert.equal(target.requests[0]?.url, '/refunds/re_1')
  })

  it('report secret_missing, naming the variable, when a header secret is unset', async (t) => {
    const target = await startTarget(t, (_req, res) => json(res, 200, { state: 'settled' }))
    const probe = await permissive.request(permissive.adminKey, {
      method: 'POST',
      url: '/v1/probes',
      payload: probeBody({
        url: `${target.url}/refunds/{{params.refund_id}}`,
        headers: { authorization: { env: 'LEDGER_TOKEN' } },
      }),
    })
    const run = await permissive.request(permissive.adminKey, {
      method: 'POST',
      url: `/v1/probes/${probe.json().probe_id}/dry-run`,
      payload: { params: { refund_id: 're_1' } },
    })
    assert.equal(run.statusCode, 200)
    assert.deepEqual(run.json().error, {
      code: 'secret_missing',
      detail: 'environment variable LEDGER_TOKEN for header authorization is not set',
    })
    assert.equal(target.requests.length, 0)
  })

  it('refuse a param that would climb the path, and encode one that would leave its segment', async (t) => {
    const target = await startTarget(t, (_req, res) => json(res, 200, { state: 'settled' }))
    const probe = await permissive.request(permissive.adminKey, {
      method: 'POST',
      url: '/v1/probes',
      payload: probeBody({ url: `${target.url}/tenants/acme/refunds/{{params.refund_id}}?v={{params.v}}` }),
    })
    const dryRun = (params: Record<string, string>) =>
      permissive.request(permissive.adminKey, {
        method: 'POST',
        url: `/v1/probes/${probe.json().probe_id}/dry-run`,
        payload: { params },
      })
    const climbing = await dryRun({ refund_id: '..', v: '1' })
    assert.equal(climbing.json().error.code, 'param_missing')
    assert.match(climbing.json().error.detail, /param refund_id would make a path segment/)
    assert.equal(target.requests.length, 0)
    const escaping = await dryRun({ refund_id: '../../admin?x=1#', v: '1&admin=true' })
    assert.equal(escaping.json().result, 'success', escaping.body)
    assert.equal(
      target.requests[0]?.url,
      '/tenants/acme/refunds/..%2F..%2Fadmin%3Fx%3D1%23?v=1%26admin%3Dtrue',
      'every value stayed inside its own path segment and query value',
    )
  })
})
