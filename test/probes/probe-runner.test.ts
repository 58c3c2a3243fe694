import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it, type TestContext } from 'node:test'
import { sha256 } from '../../src/domain/shared/canonical-json.ts'
import { normalizeProbeDefinition } from '../../src/probes/probe-definition.ts'
import {
  backoffDelayMs,
  type ProbeRunOptions,
  type ProbeVersion,
  resolveJsonPointer,
  runProbe,
} from '../../src/probes/probe-runner.ts'
import { createGuardedDispatcher, type SsrfPolicy } from '../../src/probes/ssrf-guard.ts'

// Every server here is a real node:http server on 127.0.0.1, port 0. The runner is
// given `allowPrivate: true` so it may reach them through the real guarded dispatcher.

const policy: SsrfPolicy = { allowedHosts: [], allowPrivate: true }
const dispatcher = createGuardedDispatcher(policy)
after(() => dispatcher.close())

const outcome = { subagent_id: 'sa-1', run_id: 'run-1' }
const fixedNow = () => new Date('2030-01-02T03:04:05.678Z')

function options(extra: Partial<ProbeRunOptions> = {}): ProbeRunOptions {
  return { policy, env: {}, now: fixedNow, backoffBaseMs: 5, dispatcher, ...extra }
}

interface TestServer {
  url: string
  requests: http.IncomingMessage[]
  connections: number
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, index: number) => void

async function serve(t: TestContext, handler: Handler): Promise<TestServer> {
  const state: TestServer = { url: '', requests: [], connections: 0 }
  const server = http.createServer((req, res) => {
    state.requests.push(req)
    handler(req, res, state.requests.length - 1)
  })
  server.on('connection', () => {
    state.connections++
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  t.after(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return state
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(typeof body === 'string' ? body : JSON.stringify(body))
}

interface ProbeShape {
  url: string
  method?: 'GET' | 'HEAD' | 'POST'
  headers?: Record<string, string | { env: string }>
  timeout_ms?: number
  retries?: number
  status?: number
  pointer?: string
  map?: Record<string, string>
}

function probe(shape: ProbeShape): ProbeVersion {
  const definition = normalizeProbeDefinition({
    name: 'test-probe',
    request: {
      url: shape.url,
      ...(shape.method ? { method: shape.method } : {}),
      headers: shape.headers ?? {},
    },
    timeout_ms: shape.timeout_ms ?? 2000,
    retries: shape.retries ?? 0,
    predicate: {
      status: shape.status ?? 200,
      pointer: shape.pointer ?? '/state',
      map: shape.map ?? { settled: 'success', pending: 'partial', reversed: 'failure' },
    },
  })
  return { probe_id: 'probe-1', version: 3, probe_digest: 'sha256:abc', definition }
}

describe('runProbe: mapping a response to a result', () => {
  it('records a success with status, digest of the raw bytes, one attempt and no error', async (t) => {
    const body = '{"state":"settled","extra":[1,2,3]}'
    const server = await serve(t, (_req, res) => json(res, 200, body))
    const { record, durationMs } = await runProbe(probe({ url: `${server.url}/r/1` }), {}, outcome, options())
    assert.deepEqual(record, {
      probe_id: 'probe-1',
      probe_version: 3,
      probe_digest: 'sha256:abc',
      request: { method: 'GET', url: `${server.url}/r/1` },
      executed_at: '2030-01-02T03:04:05.678Z',
      attempts: 1,
      http_status: 200,
      response_digest: sha256(Buffer.from(body)),
      result: 'success',
      error: null,
    })
    assert.ok(durationMs >= 0)
  })

  for (const [state, result] of [
    ['settled', 'success'],
    ['pending', 'partial'],
    ['reversed', 'failure'],
  ] as const) {
    it(`maps "${state}" to ${result}`, async (t) => {
      const server = await serve(t, (_req, res) => json(res, 200, { state }))
      const { record } = await runProbe(probe({ url: server.url }), {}, outcome, options())
      assert.equal(record.result, result)
      assert.equal(record.error, null)
    })
  }

  it('looks numbers and booleans up by their string form, through arrays and escaped keys', async (t) => {
    const server = await serve(t, (_req, res) =>
      json(res, 200, { items: [{ 'a/b': { 'c~d': 2 } }, { ok: true }] }),
    )
    const byNumber = await runProbe(
      probe({ url: server.url, pointer: '/items/0/a~1b/c~0d', map: { '2': 'partial' } }),
      {},
      outcome,
      options(),
    )
    assert.equal(byNumber.record.result, 'partial')
    const byBoolean = await runProbe(
      probe({ url: server.url, pointer: '/items/1/ok', map: { true: 'success' } }),
      {},
      outcome,
      options(),
    )
    assert.equal(byBoolean.record.result, 'success')
  })

  it('sends POST and HEAD with the declared method', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, { state: 'settled' }))
    const post = await runProbe(probe({ url: server.url, method: 'POST' }), {}, outcome, options())
    assert.equal(post.record.result, 'success')
    assert.equal(post.record.request.method, 'POST')
    const head = await runProbe(probe({ url: server.url, method: 'HEAD' }), {}, outcome, options())
    // A HEAD response has no body, so there is no JSON to map.
    assert.equal(head.record.error?.code, 'invalid_json')
    assert.deepEqual(
      server.requests.map((r) => r.method),
      ['POST', 'HEAD'],
    )
  })
})

describe('runProbe: predicate errors', () => {
  it('reports status_mismatch for a 4xx and does not retry it', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 404, { error: 'no such refund' }))
    const { record } = await runProbe(probe({ url: server.url, retries: 3 }), {}, outcome, options())
    assert.equal(record.error?.code, 'status_mismatch')
    assert.equal(record.error?.detail, 'expected status 200, got 404')
    assert.equal(record.http_status, 404)
    assert.equal(record.response_digest, sha256(JSON.stringify({ error: 'no such refund' })))
    assert.equal(record.result, null)
    assert.equal(record.attempts, 1)
    assert.equal(server.requests.length, 1)
  })

  it('reports invalid_json for a malformed body, keeping status and digest', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, '{"state": settled'))
    const { record } = await runProbe(probe({ url: server.url }), {}, outcome, options())
    assert.equal(record.error?.code, 'invalid_json')
    assert.equal(record.http_status, 200)
    assert.equal(record.response_digest, sha256('{"state": settled'))
  })

  it('reports invalid_json for bytes that are not UTF-8', async (t) => {
    const server = await serve(t, (_req, res) => {
      res.writeHead(200)
      res.end(Buffer.from([0x22, 0xff, 0xfe, 0x22]))
    })
    const { record } = await runProbe(probe({ url: server.url, pointer: '' }), {}, outcome, options())
    assert.equal(record.error?.code, 'invalid_json')
  })

  it('reports pointer_missing when the pointer does not resolve', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, { status: 'settled', list: [1] }))
    for (const pointer of ['/state', '/list/1', '/list/-', '/list/01', '/status/x']) {
      const { record } = await runProbe(probe({ url: server.url, pointer }), {}, outcome, options())
      assert.equal(record.error?.code, 'pointer_missing', pointer)
      assert.equal(record.http_status, 200)
    }
  })

  it('reports unmapped_value naming the pointer and the type, never quoting the value', async (t) => {
    const cases: Array<[unknown, string]> = [
      ['settling-quoted-value', 'a string of 21 characters'],
      ['d\u00e9j\u00e0-\u{1F600}', 'a string of 6 characters'],
      [738291, 'a number'],
      [false, 'a boolean'],
      [null, 'null'],
      [{ v: 'settled-in-object' }, 'an object with 1 keys'],
      [['settled-in-array', 'x'], 'an array of 2 items'],
    ]
    const server = await serve(t, (_req, res, i) => json(res, 200, { state: cases[i]![0] }))
    for (const [value, described] of cases) {
      const { record } = await runProbe(probe({ url: server.url }), {}, outcome, options())
      assert.equal(record.error?.code, 'unmapped_value', JSON.stringify(value))
      assert.equal(record.error?.detail, `the value at '/state' (${described}) has no entry in the map`)
      assert.equal(record.result, null)
    }
  })

  it('does not resolve map entries inherited from Object.prototype', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, { state: 'toString' }))
    const { record } = await runProbe(probe({ url: server.url }), {}, outcome, options())
    assert.equal(record.error?.code, 'unmapped_value')
  })
})

describe('runProbe: retries', () => {
  it('retries a 5xx and succeeds on the second attempt', async (t) => {
    const server = await serve(t, (_req, res, i) =>
      i === 0 ? json(res, 503, { error: 'busy' }) : json(res, 200, { state: 'settled' }),
    )
    const { record } = await runProbe(probe({ url: server.url, retries: 1 }), {}, outcome, options())
    assert.equal(record.result, 'success')
    assert.equal(record.attempts, 2)
    assert.equal(record.http_status, 200)
    assert.equal(server.requests.length, 2)
  })

  it('reports status_mismatch with the last 5xx once the retries are spent', async (t) => {
    const server = await serve(t, (_req, res, i) => json(res, 503, { attempt: i }))
    const { record } = await runProbe(probe({ url: server.url, retries: 2 }), {}, outcome, options())
    assert.equal(record.error?.code, 'status_mismatch')
    assert.equal(record.http_status, 503)
    assert.equal(record.attempts, 3)
    assert.equal(record.response_digest, sha256(JSON.stringify({ attempt: 2 })))
    assert.equal(server.requests.length, 3)
  })

  it('does not retry a 5xx the predicate expects', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 503, { state: 'pending' }))
    const { record } = await runProbe(
      probe({ url: server.url, retries: 2, status: 503 }),
      {},
      outcome,
      options(),
    )
    assert.equal(record.result, 'partial')
    assert.equal(record.attempts, 1)
  })

  it('retries network errors and reports network with no status', async (t) => {
    const server = await serve(t, (req) => req.socket.destroy())
    const { record } = await runProbe(probe({ url: server.url, retries: 2 }), {}, outcome, options())
    assert.equal(record.error?.code, 'network')
    assert.equal(record.attempts, 3)
    assert.equal(record.http_status, null)
    assert.equal(record.response_digest, null)
    assert.equal(server.requests.length, 3)
  })

  it('reports network for a refused connection', async () => {
    // Listen, note the port, then stop listening so the port refuses connections.
    const server = http.createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const deadUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    await new Promise<void>((resolve) => server.close(() => resolve()))
    const { record } = await runProbe(probe({ url: deadUrl, retries: 1 }), {}, outcome, options())
    assert.equal(record.error?.code, 'network')
    assert.match(record.error?.detail ?? '', /ECONNREFUSED/)
    assert.equal(record.attempts, 2)
  })

  it('backs off exponentially with jitter', () => {
    assert.equal(
      backoffDelayMs(1, 100, () => 0),
      50,
    )
    assert.equal(
      backoffDelayMs(1, 100, () => 1),
      100,
    )
    assert.equal(
      backoffDelayMs(3, 100, () => 0),
      200,
    )
    assert.equal(
      backoffDelayMs(3, 100, () => 1),
      400,
    )
    assert.equal(
      backoffDelayMs(20, 100, () => 1),
      10_000,
    )
  })
})

describe('runProbe: timeouts', () => {
  it('times out when the server never sends headers', async (t) => {
    const server = await serve(t, () => {})
    const started = performance.now()
    const { record } = await runProbe(probe({ url: server.url, timeout_ms: 200 }), {}, outcome, options())
    const elapsed = performance.now() - started
    assert.equal(record.error?.code, 'timeout')
    assert.equal(record.error?.detail, 'no complete response within 200 ms')
    assert.equal(record.http_status, null)
    assert.equal(record.response_digest, null)
    assert.equal(record.attempts, 1)
    assert.ok(elapsed >= 190 && elapsed < 1500, `elapsed ${elapsed}`)
  })

  it('retries a timeout, bounding each attempt', async (t) => {
    const server = await serve(t, (_req, res, i) => {
      if (i > 0) json(res, 200, { state: 'settled' })
    })
    const { record } = await runProbe(
      probe({ url: server.url, timeout_ms: 150, retries: 1 }),
      {},
      outcome,
      options(),
    )
    assert.equal(record.result, 'success')
    assert.equal(record.attempts, 2)
  })

  it('times out a body that trickles past timeout_ms even though each chunk arrives quickly', async (t) => {
    const timers: NodeJS.Timeout[] = []
    t.after(() => {
      for (const timer of timers) clearInterval(timer)
    })
    const server = await serve(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"state":"')
      const timer = setInterval(() => res.write('s'), 20)
      timers.push(timer)
      res.on('close', () => clearInterval(timer))
    })
    const started = performance.now()
    const { record } = await runProbe(probe({ url: server.url, timeout_ms: 300 }), {}, outcome, options())
    const elapsed = performance.now() - started
    assert.equal(record.error?.code, 'timeout')
    assert.equal(record.http_status, 200, 'the headers arrived')
    assert.equal(record.response_digest, null, 'the body never completed')
    assert.ok(elapsed >= 290 && elapsed < 2000, `elapsed ${elapsed}`)
  })
})

describe('runProbe: response size, redirects', () => {
  const FIFTY_MIB = 50 * 1024 * 1024

  /** Streams `total` bytes honouring backpressure; resolves with the bytes written when the socket closes. */
  function streamHuge(res: http.ServerResponse, total: number, declareLength: boolean): Promise<number> {
    return new Promise((resolve) => {
      res.writeHead(200, declareLength ? { 'content-length': String(total) } : {})
      const chunk = Buffer.alloc(64 * 1024, 0x61)
      let written = 0
      let closed = false
      res.on('close', () => {
        closed = true
        resolve(written)
      })
      const pump = () => {
        while (!closed && written < total) {
          written += chunk.length
          if (!res.write(chunk)) {
            res.once('drain', pump)
            return
          }
        }
        if (!closed) res.end()
      }
      pump()
    })
  }

  for (const declareLength of [false, true]) {
    it(`stops reading a 50 MiB body early (${declareLength ? 'declared content-length' : 'chunked'})`, async (t) => {
      let serverWrote: Promise<number> = Promise.resolve(0)
      const server = await serve(t, (_req, res) => {
        serverWrote = streamHuge(res, FIFTY_MIB, declareLength)
      })
      const { record } = await runProbe(probe({ url: server.url, retries: 2 }), {}, outcome, options())
      assert.equal(record.error?.code, 'response_too_large')
      assert.equal(record.error?.detail, 'response body exceeds 1048576 bytes')
      assert.equal(record.http_status, 200)
      assert.equal(record.response_digest, null)
      assert.equal(record.attempts, 1, 'too large is not retried')
      const written = await serverWrote
      assert.ok(written < 16 * 1024 * 1024, `server wrote ${written} bytes before the client hung up`)
    })
  }

  it('honours maxResponseBytes exactly', async (t) => {
    const exact = JSON.stringify({ state: 'settled', pad: 'x'.repeat(100) })
    const server = await serve(t, (_req, res) => json(res, 200, exact))
    const atCap = await runProbe(
      probe({ url: server.url }),
      {},
      outcome,
      options({ maxResponseBytes: Buffer.byteLength(exact) }),
    )
    assert.equal(atCap.record.result, 'success')
    const overCap = await runProbe(
      probe({ url: server.url }),
      {},
      outcome,
      options({ maxResponseBytes: Buffer.byteLength(exact) - 1 }),
    )
    assert.equal(overCap.record.error?.code, 'response_too_large')
  })

  it('never follows a redirect', async (t) => {
    const target = await serve(t, (_req, res) => json(res, 200, { state: 'settled' }))
    const server = await serve(t, (_req, res) => {
      res.writeHead(302, { location: `${target.url}/elsewhere` })
      res.end()
    })
    const { record } = await runProbe(probe({ url: server.url, retries: 2 }), {}, outcome, options())
    assert.equal(record.error?.code, 'redirect')
    assert.equal(record.http_status, 302)
    assert.equal(record.response_digest, sha256(''))
    assert.equal(record.attempts, 1)
    assert.equal(target.requests.length, 0)
    assert.equal(target.connections, 0)
  })
})

describe('runProbe: templates and headers', () => {
  it('URL-encodes params and outcome ids, and records the rendered URL', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, { state: 'settled' }))
    const template = `${server.url}/refunds/{{params.refund_id}}?n={{params.n}}&f={{params.flag}}&sa={{outcome.subagent_id}}&run={{outcome.run_id}}`
    const { record } = await runProbe(
      probe({ url: template }),
      { refund_id: 'a/b?c=d&e f#g%', n: 42, flag: true },
      { subagent_id: 'sub agent', run_id: 'run/1' },
      options(),
    )
    const path = '/refunds/a%2Fb%3Fc%3Dd%26e%20f%23g%25?n=42&f=true&sa=sub%20agent&run=run%2F1'
    assert.equal(record.result, 'success')
    assert.equal(server.requests[0]?.url, path)
    assert.equal(record.request.url, `${server.url}${path}`)
  })

  it('reports param_missing without any request for a missing or non-scalar param', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, { state: 'settled' }))
    const template = `${server.url}/refunds/{{params.refund_id}}`
    for (const params of [
      {},
      { refund_id: null },
      { refund_id: { id: 1 } },
      { refund_id: [1] },
      { other: 'x' },
    ]) {
      const { record } = await runProbe(probe({ url: template, retries: 2 }), params, outcome, options())
      assert.equal(record.error?.code, 'param_missing', JSON.stringify(params))
      assert.match(record.error?.detail ?? '', /param refund_id/)
      assert.equal(record.attempts, 0)
      assert.equal(record.http_status, null)
      assert.equal(record.request.url, template, 'the template is recorded when rendering fails')
    }
    assert.equal(server.connections, 0)
  })

  it('reports param_missing without any request when a param would climb the path', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, { state: 'settled' }))
    for (const value of ['.', '..']) {
      const { record } = await runProbe(
        probe({ url: `${server.url}/tenants/a/{{params.id}}/state` }),
        { id: value },
        outcome,
        options(),
      )
      assert.equal(record.error?.code, 'param_missing', value)
      assert.match(record.error?.detail ?? '', /param id would make a path segment '\.' or '\.\.'/)
    }
    assert.equal(server.connections, 0)
  })

  // A secret with every character JSON, URLs or logs treat specially; the server echoes it back.
  const awkwardSecret = 'Bearer s3cr3t"quote\\back\ttab%25+&=/?#\u00e9-0123456789'
  it('sends {env} header values but never records them in any spelling, even when the server echoes them back', async (t) => {
    const server = await serve(t, (req, res) => json(res, 200, { state: req.headers.authorization }))
    const { record } = await runProbe(
      probe({ url: server.url, headers: { authorization: { env: 'LEDGER_TOKEN' }, 'x-static': 'plain' } }),
      {},
      outcome,
      options({ env: { LEDGER_TOKEN: awkwardSecret } }),
    )
    assert.equal(server.requests[0]?.headers['x-static'], 'plain')
    assert.equal(server.requests[0]?.headers.authorization, awkwardSecret, 'the secret was sent as set')
    assert.equal(record.error?.code, 'unmapped_value')
    const text = JSON.stringify(record)
    for (const spelling of [
      awkwardSecret,
      JSON.stringify(awkwardSecret).slice(1, -1),
      encodeURIComponent(awkwardSecret),
      's3cr3t',
    ]) {
      assert.ok(!text.includes(spelling), `the record carries ${spelling}`)
    }
  })

  it('reports secret_missing without any request when an {env} header variable is unset or empty', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, { state: 'settled' }))
    for (const [env, detail] of [
      [{ OTHER: 'x' }, 'environment variable LEDGER_TOKEN for header authorization is not set'],
      [{ LEDGER_TOKEN: '' }, 'environment variable LEDGER_TOKEN for header authorization is empty'],
    ] as const) {
      const { record } = await runProbe(
        probe({ url: server.url, headers: { authorization: { env: 'LEDGER_TOKEN' } }, retries: 2 }),
        {},
        outcome,
        options({ env }),
      )
      assert.equal(record.error?.code, 'secret_missing')
      assert.equal(record.error?.detail, detail)
      assert.equal(record.attempts, 0)
    }
    assert.equal(server.connections, 0)
  })

  it('reports secret_missing for a value HTTP cannot carry, naming the variable but not the value', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, { state: 'settled' }))
    for (const value of ['token-\u{1F600}-emoji', 'token-\u0100', 'line\r\nx-injected: 1', 'token-\uD800']) {
      const { record } = await runProbe(
        probe({ url: server.url, headers: { authorization: { env: 'LEDGER_TOKEN' } } }),
        {},
        outcome,
        options({ env: { LEDGER_TOKEN: value } }),
      )
      assert.equal(record.error?.code, 'secret_missing', JSON.stringify(value))
      assert.match(
        record.error?.detail ?? '',
        /^environment variable LEDGER_TOKEN for header authorization holds characters an HTTP header value cannot carry/,
      )
      assert.ok(!JSON.stringify(record).includes('token-'))
    }
    assert.equal(server.connections, 0)
  })

  it('never reads a reserved variable, even from an unfiltered environment or an old definition', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, { state: 'settled' }))
    const stored = probe({ url: server.url })
    for (const name of ['ARBITER_SIGNING_KEY', 'DATABASE_URL', 'PGPASSWORD']) {
      // As stored before registration refused these names: the schema would not let it through now.
      stored.definition.request.headers = { authorization: { env: name } }
      const { record } = await runProbe(stored, {}, outcome, options({ env: { [name]: 'reserved-value' } }))
      assert.equal(record.error?.code, 'secret_missing', name)
      assert.match(
        record.error?.detail ?? '',
        new RegExp(`^environment variable ${name} .* is reserved by Arbiter`),
      )
    }
    assert.equal(server.connections, 0)
  })

  it('refuses a stored definition whose host is a template, before rendering or connecting', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, { state: 'settled' }))
    const stored = probe({ url: server.url })
    // As stored before templates were confined to path and query.
    stored.definition.request.url = `http://{{params.host}}:${new URL(server.url).port}/`
    const { record } = await runProbe(stored, { host: '127.0.0.1' }, outcome, options())
    assert.equal(record.error?.code, 'ssrf_blocked')
    assert.match(record.error?.detail ?? '', /not in its host/)
    assert.equal(record.attempts, 0)
    assert.equal(server.connections, 0)
  })

  it('creates and reuses a guarded dispatcher per policy when none is given', async (t) => {
    const server = await serve(t, (_req, res) => json(res, 200, { state: 'settled' }))
    const first = await runProbe(probe({ url: server.url }), {}, outcome, { policy, env: {} })
    const second = await runProbe(probe({ url: server.url }), {}, outcome, { policy, env: {} })
    assert.equal(first.record.result, 'success')
    assert.equal(second.record.result, 'success')
    const blocked = await runProbe(probe({ url: server.url }), {}, outcome, {
      policy: { allowedHosts: [], allowPrivate: false },
      env: {},
    })
    assert.equal(blocked.record.error?.code, 'ssrf_blocked')
  })
})

describe('resolveJsonPointer', () => {
  const doc = { a: [{ b: 1 }], 'm~n': { 'x/y': 'v' }, '': 'empty-key', z: null }
  const cases: Array<[string, unknown]> = [
    ['', doc],
    ['/a/0/b', 1],
    ['/m~0n/x~1y', 'v'],
    ['/', 'empty-key'],
    ['/z', null],
    ['/a/1', undefined],
    ['/a/-', undefined],
    ['/a/00', undefined],
    ['/missing', undefined],
    ['/z/deeper', undefined],
    ['/a/0/b/c', undefined],
  ]
  for (const [pointer, expected] of cases) {
    it(`resolves '${pointer}'`, () => {
      assert.deepEqual(resolveJsonPointer(doc, pointer), expected)
    })
  }
})
