import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { hashJson } from '../../src/domain/shared/canonical-json.ts'
import { normalizeProbeDefinition, probeDefinitionSchema } from '../../src/probes/probe-definition.ts'

// The example from the probe documentation (docs/probes.md).
const specExample = {
  name: 'ledger-refund-settled',
  request: {
    method: 'GET',
    url: 'https://ledger.example.com/refunds/{{params.refund_id}}',
    headers: { authorization: { env: 'LEDGER_TOKEN' } },
  },
  timeout_ms: 2000,
  retries: 1,
  predicate: {
    status: 200,
    pointer: '/state',
    map: { settled: 'success', pending: 'partial', reversed: 'failure' },
  },
}

const minimal = {
  name: 'minimal',
  request: { url: 'https://ledger.example.com/health' },
  predicate: { status: 200, pointer: '', map: { ok: 'success' } },
}

function rejects(input: unknown): boolean {
  return !probeDefinitionSchema.safeParse(input).success
}

describe('normalizeProbeDefinition', () => {
  it('accepts the documented example unchanged', () => {
    assert.deepEqual(normalizeProbeDefinition(specExample), specExample)
  })

  it('fills in method GET, headers {}, timeout_ms 2000 and retries 0', () => {
    assert.deepEqual(normalizeProbeDefinition(minimal), {
      name: 'minimal',
      request: { method: 'GET', url: 'https://ledger.example.com/health', headers: {} },
      timeout_ms: 2000,
      retries: 0,
      predicate: { status: 200, pointer: '', map: { ok: 'success' } },
    })
  })

  it('gives the same digest whether defaults were written out or omitted', () => {
    const explicit = {
      ...minimal,
      request: { method: 'GET', url: minimal.request.url, headers: {} },
      timeout_ms: 2000,
      retries: 0,
    }
    assert.equal(hashJson(normalizeProbeDefinition(explicit)), hashJson(normalizeProbeDefinition(minimal)))
  })

  it('throws a ZodError for an invalid definition', () => {
    assert.throws(() => normalizeProbeDefinition({ ...minimal, retries: 9 }), { name: 'ZodError' })
  })

  it('throws for a URL template that is not allowed', () => {
    assert.throws(
      () => normalizeProbeDefinition({ ...minimal, request: { url: 'https://h.example/{{env.SECRET}}' } }),
      { name: 'ZodError' },
    )
  })
})

describe('probeDefinitionSchema', () => {
  it('rejects unknown fields at every level', () => {
    assert.ok(rejects({ ...minimal, extra: 1 }))
    assert.ok(rejects({ ...minimal, request: { ...minimal.request, body: '{}' } }))
    assert.ok(rejects({ ...minimal, predicate: { ...minimal.predicate, default: 'failure' } }))
    assert.ok(
      rejects({
        ...minimal,
        request: { ...minimal.request, headers: { authorization: { env: 'X', fallback: 'y' } } },
      }),
    )
    assert.ok(rejects({ ...minimal, timeout: 100 }))
  })

  const invalid: Array<[string, unknown]> = [
    ['empty name', { ...minimal, name: '' }],
    ['name over 200 chars', { ...minimal, name: 'n'.repeat(201) }],
    ['method PUT', { ...minimal, request: { ...minimal.request, method: 'PUT' } }],
    ['lower-case method', { ...minimal, request: { ...minimal.request, method: 'get' } }],
    ['timeout_ms 0', { ...minimal, timeout_ms: 0 }],
    ['timeout_ms 60001', { ...minimal, timeout_ms: 60_001 }],
    ['fractional timeout_ms', { ...minimal, timeout_ms: 1.5 }],
    ['retries -1', { ...minimal, retries: -1 }],
    ['retries 6', { ...minimal, retries: 6 }],
    ['status 99', { ...minimal, predicate: { ...minimal.predicate, status: 99 } }],
    ['status 600', { ...minimal, predicate: { ...minimal.predicate, status: 600 } }],
    ['pointer without leading slash', { ...minimal, predicate: { ...minimal.predicate, pointer: 'state' } }],
    ['pointer with a bad ~ escape', { ...minimal, predicate: { ...minimal.predicate, pointer: '/a~2b' } }],
    ['empty map', { ...minimal, predicate: { ...minimal.predicate, map: {} } }],
    ['map value outside the enum', { ...minimal, predicate: { ...minimal.predicate, map: { ok: 'maybe' } } }],
    [
      'map key __proto__',
      { ...minimal, predicate: { ...minimal.predicate, map: JSON.parse('{"__proto__":"success"}') } },
    ],
    ['Host header', { ...minimal, request: { ...minimal.request, headers: { Host: 'internal' } } }],
    ['header name with a space', { ...minimal, request: { ...minimal.request, headers: { 'x y': 'v' } } }],
    [
      'header value with CRLF',
      { ...minimal, request: { ...minimal.request, headers: { 'x-a': 'v\r\nx-b: w' } } },
    ],
    [
      'env name with a dash',
      { ...minimal, request: { ...minimal.request, headers: { 'x-a': { env: 'A-B' } } } },
    ],
    ['url that is not a string', { ...minimal, request: { url: 42 } }],
    ['ftp url', { ...minimal, request: { url: 'ftp://h.example/file' } }],
  ]
  for (const [label, input] of invalid) {
    it(`rejects ${label}`, () => {
      assert.ok(rejects(input))
    })
  }

  it('accepts pointers with ~0 and ~1 escapes and literal header values', () => {
    const input = {
      ...minimal,
      request: {
        ...minimal.request,
        method: 'POST',
        headers: { accept: 'application/json', 'x-k': { env: 'K_1' } },
      },
      predicate: { ...minimal.predicate, pointer: '/a~1b/c~0d/0' },
    }
    assert.equal(probeDefinitionSchema.safeParse(input).success, true)
  })
})

describe('probeDefinitionSchema: what an outcome can and cannot steer', () => {
  function firstIssue(input: unknown): { path: string; message: string } {
    const result = probeDefinitionSchema.safeParse(input)
    assert.equal(result.success, false, JSON.stringify(input))
    const issue = result.error!.issues[0]!
    return { path: issue.path.join('/'), message: issue.message }
  }

  it('refuses a template in a header value, naming the header', () => {
    const issue = firstIssue({
      ...minimal,
      request: { ...minimal.request, headers: { 'x-tenant': 'tenant-{{params.tenant}}' } },
    })
    assert.equal(issue.path, 'request/headers/x-tenant')
    assert.match(issue.message, /templates are allowed only in the url's path and query, not in headers/)
  })

  it('refuses a template in the url host, naming the part', () => {
    const issue = firstIssue({ ...minimal, request: { url: 'http://{{params.h}}:8080/x' } })
    assert.equal(issue.path, 'request/url')
    assert.match(issue.message, /not in its host/)
  })

  const reserved = [
    'ARBITER_PROBE_ALLOW_PRIVATE',
    'ARBITER_SIGNING_KEY',
    'arbiter_signing_key',
    'DATABASE_URL',
    'TEST_DATABASE_URL',
    'PGPASSWORD',
    'PGHOST',
  ]
  for (const name of reserved) {
    it(`refuses {"env": "${name}"}: Arbiter reserves it, and says so`, () => {
      const issue = firstIssue({
        ...minimal,
        request: { ...minimal.request, headers: { authorization: { env: name } } },
      })
      assert.equal(issue.path, 'request/headers/authorization/env')
      assert.match(issue.message, /reserves \(ARBITER_\*, OTEL_\*, DATABASE_URL .* PG\*\)/)
    })
  }

  it('accepts env names that merely resemble reserved ones', () => {
    for (const name of ['LEDGER_TOKEN', 'MY_ARBITER_TOKEN', 'DATABASE_URL_HINT', 'API_PG_KEY']) {
      const input = { ...minimal, request: { ...minimal.request, headers: { authorization: { env: name } } } }
      assert.equal(probeDefinitionSchema.safeParse(input).success, true, name)
    }
  })
})
