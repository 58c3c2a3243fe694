import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import v8 from 'node:v8'
import vm from 'node:vm'
import {
  type ArbiterClient,
  type ArbiterClientOptions,
  ArbiterError,
  ArbiterNetworkError,
  ArbiterProtocolError,
  ArbiterTimeoutError,
  createArbiterClient,
} from '../src/index.ts'
import {
  problem,
  type ReceivedRequest,
  type ScriptedServer,
  sendJson,
  startScriptedServer,
} from './helpers/scripted-server.ts'

const OUTCOME_ID = '0b7e4c64-3f4e-4a3c-9d53-1f0f7d1c2a10'
const outcome = { outcome_id: OUTCOME_ID, subagent_id: 's', run_id: 'r' }
const evidence = [{ kind: 'exit_code' as const, content: 0 }]

async function scripted(
  t: TestContext,
  script: Parameters<typeof startScriptedServer>[0],
  options: Partial<ArbiterClientOptions> = {},
): Promise<{ server: ScriptedServer; client: ArbiterClient }> {
  const server = await startScriptedServer(script)
  t.after(() => server.close())
  const client = createArbiterClient({
    baseUrl: server.baseUrl,
    apiKey: 'arb_test',
    timeoutMs: 5_000,
    ...options,
  })
  return { server, client }
}

/** 503 with the given Retry-After on the first `failures` requests, then `answer`. */
function unavailableThen(
  failures: number,
  retryAfter: string | undefined,
  status = 200,
  answer: unknown = outcome,
) {
  return (n: number, _request: ReceivedRequest, response: import('node:http').ServerResponse) => {
    if (n < failures) {
      sendJson(
        response,
        503,
        problem(503, 'Service Unavailable'),
        retryAfter === undefined ? {} : { 'retry-after': retryAfter },
      )
    } else {
      sendJson(response, status, answer)
    }
  }
}

/** A full garbage collection, as the runtime may run at any moment (the flag is set for this process only). */
v8.setFlagsFromString('--expose-gc')
const collectGarbage = vm.runInNewContext('gc') as () => void

/** Sends the headers and the start of a JSON body, then nothing more. */
function stallAfterHeaders(
  _n: number,
  _request: ReceivedRequest,
  response: import('node:http').ServerResponse,
) {
  response.writeHead(200, { 'content-type': 'application/json' })
  response.write('{"outcome_id":')
  const timer = setInterval(collectGarbage, 20)
  setTimeout(() => clearInterval(timer), 250)
}

const gap = (server: ScriptedServer, i: number) => server.requests[i]!.at - server.requests[i - 1]!.at

describe('retries', () => {
  it('retries a GET answered 503 with Retry-After: 1 once the second has passed, and no later than needed', async (t) => {
    const { server, client } = await scripted(t, unavailableThen(1, '1'))
    assert.deepEqual(await client.outcomes.get(OUTCOME_ID), outcome)
    assert.equal(server.requests.length, 2)
    assert.ok(
      gap(server, 1) >= 995,
      `retried after ${gap(server, 1)} ms, before the second Retry-After asked`,
    )
    assert.ok(gap(server, 1) < 1_400, `retried after ${gap(server, 1)} ms: slept longer than asked`)
  })

  it('honours a Retry-After given as an HTTP date on 429', async (t) => {
    let until = 0
    const { server, client } = await scripted(t, (n, _request, response) => {
      if (n === 0) {
        until = Math.ceil((Date.now() + 1_000) / 1_000) * 1_000
        sendJson(response, 429, problem(429, 'Too Many Requests'), {
          'retry-after': new Date(until).toUTCString(),
        })
      } else sendJson(response, 200, outcome)
    })
    await client.outcomes.get(OUTCOME_ID)
    assert.equal(server.requests.length, 2)
    const second = server.requests[1]!.wallAt
    assert.ok(second >= until - 5, `retried ${until - second} ms before the date`)
    assert.ok(second < until + 400, `retried ${second - until} ms after the date`)
  })

  it('backs off with jitter when a 503 names no Retry-After', async (t) => {
    const { server, client } = await scripted(t, unavailableThen(2, undefined), {
      retry: { baseDelayMs: 200 },
      random: () => 0,
    })
    await client.outcomes.get(OUTCOME_ID)
    assert.equal(server.requests.length, 3)
    // random() = 0 keeps exactly half of 200 ms, then half of 400 ms.
    assert.ok(gap(server, 1) >= 95 && gap(server, 1) < 450, `first backoff ${gap(server, 1)} ms`)
    assert.ok(gap(server, 2) >= 195 && gap(server, 2) < 600, `second backoff ${gap(server, 2)} ms`)
  })

  const idempotentCalls: [string, (client: ArbiterClient) => Promise<unknown>][] = [
    ['create outcome (natural key)', (c) => c.outcomes.create({ subagent_id: 's', run_id: 'r', evidence })],
    ['add evidence (a set of items)', (c) => c.outcomes.addEvidence(OUTCOME_ID, { evidence })],
    [
      'interpretation (resubmitting the latest returns it)',
      (c) =>
        c.outcomes.interpret(OUTCOME_ID, {
          orchestrator_id: 'orch-a',
          outcome_interpretation: 'success',
          success_criterion: { require: ['exit_code == 0'] },
        }),
    ],
    ['evaluate (same inputs, same manifest)', (c) => c.outcomes.evaluate(OUTCOME_ID)],
    ['revoke a key (revoking twice is revoking once)', (c) => c.keys.revoke(OUTCOME_ID)],
    ['list manifests', (c) => c.manifests.list({ limit: '10' })],
  ]
  for (const [name, call] of idempotentCalls) {
    it(`resends ${name} unchanged after a 503`, async (t) => {
      const { server, client } = await scripted(t, unavailableThen(1, '0', 200))
      await call(client)
      assert.equal(server.requests.length, 2)
      const [first, second] = server.requests as [ReceivedRequest, ReceivedRequest]
      assert.deepEqual([second.method, second.url, second.body], [first.method, first.url, first.body])
    })
  }

  const onceCalls: [string, (client: ArbiterClient) => Promise<unknown>][] = [
    [
      'a resolution',
      (c) => c.outcomes.resolve(OUTCOME_ID, { outcome: 'success', rationale: 'ledger shows it settled' }),
    ],
    ['a key creation', (c) => c.keys.create({ role: 'dashboard', label: 'wall screen' })],
    [
      'a probe registration',
      (c) =>
        c.probes.create({
          name: 'p',
          request: { url: 'https://ledger.example.com/x' },
          predicate: { status: 200, pointer: '/state', map: { ok: 'success' } },
        }),
    ],
    [
      'a probe replacement (every PUT is a new version)',
      (c) =>
        c.probes.replace(OUTCOME_ID, {
          name: 'p',
          request: { url: 'https://ledger.example.com/x' },
          predicate: { status: 200, pointer: '/state', map: { ok: 'success' } },
        }),
    ],
    ['a probe dry run', (c) => c.probes.dryRun(OUTCOME_ID, { params: {} })],
  ]
  for (const [name, call] of onceCalls) {
    it(`sends ${name} once: a 503 surfaces as ArbiterError`, async (t) => {
      const { server, client } = await scripted(t, unavailableThen(1, '0'))
      const error = await call(client).then(
        () => assert.fail('expected an ArbiterError'),
        (err: unknown) => err,
      )
      assert.ok(error instanceof ArbiterError)
      assert.equal(error.status, 503)
      assert.equal(error.attempts, 1)
      assert.equal(error.retryAfter, '0')
      assert.equal(server.requests.length, 1)
    })
  }

  it('gives up after maxAttempts with the last answer, counting the attempts', async (t) => {
    const { server, client } = await scripted(t, unavailableThen(99, '0'), { retry: { maxAttempts: 3 } })
    const error = await client.outcomes.get(OUTCOME_ID).catch((err: unknown) => err)
    assert.ok(error instanceof ArbiterError)
    assert.equal(error.attempts, 3)
    assert.equal(server.requests.length, 3)
    assert.equal(
      await client.outcomes.get(OUTCOME_ID, { maxAttempts: 1 }).catch((e: ArbiterError) => e.attempts),
      1,
    )
  })

  it('gives up at once when Retry-After asks for longer than maxRetryAfterMs', async (t) => {
    const { server, client } = await scripted(t, unavailableThen(1, '3600'))
    const started = performance.now()
    const error = await client.outcomes.get(OUTCOME_ID).catch((err: unknown) => err)
    assert.ok(error instanceof ArbiterError)
    assert.equal(error.retryAfter, '3600')
    assert.equal(server.requests.length, 1)
    assert.ok(performance.now() - started < 1_000)
  })

  it('retries no other error status', async (t) => {
    for (const status of [400, 404, 409, 500, 502]) {
      const { server, client } = await scripted(t, (_n, _r, response) =>
        sendJson(response, status, problem(status, 'No'), { 'retry-after': '0' }),
      )
      await assert.rejects(client.outcomes.get(OUTCOME_ID), ArbiterError)
      assert.equal(server.requests.length, 1, `status ${status}`)
    }
  })

  it('retries an idempotent call whose connection was dropped, and reports ArbiterNetworkError when it persists', async (t) => {
    const dropFirst = await scripted(t, (n, _r, response) => {
      if (n === 0) response.socket?.destroy()
      else sendJson(response, 200, outcome)
    })
    assert.deepEqual(await dropFirst.client.outcomes.get(OUTCOME_ID), outcome)
    assert.equal(dropFirst.server.requests.length, 2)

    const dropAll = await scripted(
      t,
      (_n, _r, response) => {
        response.socket?.destroy()
      },
      {
        retry: { maxAttempts: 3, baseDelayMs: 10 },
      },
    )
    const error = await dropAll.client.outcomes.get(OUTCOME_ID).catch((err: unknown) => err)
    assert.ok(error instanceof ArbiterNetworkError, String(error))
    assert.equal(error.attempts, 3)
    assert.equal(dropAll.server.requests.length, 3)
  })

  it('does not resend a call that is not idempotent when its connection drops', async (t) => {
    const { server, client } = await scripted(t, (_n, _r, response) => {
      response.socket?.destroy()
    })
    const error = await client.outcomes
      .resolve(OUTCOME_ID, { outcome: 'failure', rationale: 'r' })
      .catch((err: unknown) => err)
    assert.ok(error instanceof ArbiterNetworkError)
    assert.equal(error.attempts, 1)
    assert.equal(server.requests.length, 1)
  })

  it('reports a connection refused as ArbiterNetworkError', async () => {
    const closed = await startScriptedServer(() => {})
    await closed.close()
    const client = createArbiterClient({
      baseUrl: closed.baseUrl,
      retry: { maxAttempts: 2, baseDelayMs: 10 },
    })
    const error = await client.health().catch((err: unknown) => err)
    assert.ok(error instanceof ArbiterNetworkError)
    assert.match(error.message, /ECONNREFUSED/)
  })
})

describe('timeouts and cancellation', () => {
  it('abandons an attempt after timeoutMs with ArbiterTimeoutError, without retrying it', async (t) => {
    const { server, client } = await scripted(t, () => {
      // Never answer.
    })
    const started = performance.now()
    const error = await client.outcomes.get(OUTCOME_ID, { timeoutMs: 200 }).catch((err: unknown) => err)
    const elapsed = performance.now() - started
    assert.ok(error instanceof ArbiterTimeoutError, String(error))
    assert.equal(error.timeoutMs, 200)
    assert.ok(elapsed >= 190 && elapsed < 1_500, `gave up after ${elapsed} ms`)
    assert.equal(server.requests.length, 1)
  })

  it('bounds reading the answer too, even after a garbage collection', async (t) => {
    const { client } = await scripted(t, stallAfterHeaders)
    const started = performance.now()
    const error = await client.outcomes.get(OUTCOME_ID, { timeoutMs: 300 }).catch((err: unknown) => err)
    assert.ok(error instanceof ArbiterTimeoutError, String(error))
    assert.ok(performance.now() - started < 2_000)
  })

  it("reaches an answer still arriving with the caller's abort, even after a garbage collection", async (t) => {
    const { client } = await scripted(t, stallAfterHeaders)
    await assert.rejects(client.outcomes.get(OUTCOME_ID, { signal: AbortSignal.timeout(300) }), {
      name: 'TimeoutError',
    })
  })

  it("rejects with the caller's abort reason, also while waiting to retry", async (t) => {
    const { server, client } = await scripted(t, unavailableThen(99, '30'))
    const controller = new AbortController()
    setTimeout(() => controller.abort(new Error('the orchestrator moved on')), 150)
    const started = performance.now()
    await assert.rejects(
      client.outcomes.get(OUTCOME_ID, { signal: controller.signal }),
      /the orchestrator moved on/,
    )
    assert.ok(performance.now() - started < 1_000)
    assert.equal(server.requests.length, 1)
  })

  it('aborts a request in flight', async (t) => {
    const { client } = await scripted(t, () => {})
    await assert.rejects(client.outcomes.get(OUTCOME_ID, { signal: AbortSignal.timeout(100) }), {
      name: 'TimeoutError',
    })
  })
})

describe('errors', () => {
  it('raises a problem+json as ArbiterError with its field errors and extension members', async (t) => {
    const errors = [{ path: '/evidence/0/kind', message: 'Invalid option' }]
    const manifestId = '7d1c0b54-6b8e-4b0a-bb0c-8b0a5cba8f21'
    const { client } = await scripted(t, (n, _r, response) => {
      if (n === 0) sendJson(response, 400, problem(400, 'Bad Request', { errors }))
      else
        sendJson(response, 409, problem(409, 'Conflict', { manifest_id: manifestId, outcome_id: OUTCOME_ID }))
    })
    const invalid = await client.outcomes
      .create({ subagent_id: 's', run_id: 'r', evidence })
      .catch((e: unknown) => e)
    assert.ok(invalid instanceof ArbiterError)
    assert.equal(invalid.status, 400)
    assert.equal(invalid.type, 'urn:test:400')
    assert.equal(invalid.title, 'Bad Request')
    assert.equal(invalid.detail, 'Bad Request (scripted)')
    assert.deepEqual(invalid.errors, errors)
    assert.deepEqual(invalid.request, { method: 'POST', path: '/v1/outcomes' })
    const conflict = await client.outcomes.get(OUTCOME_ID).catch((e: unknown) => e)
    assert.ok(conflict instanceof ArbiterError)
    assert.equal(conflict.manifestId, manifestId)
    assert.equal(conflict.extension('outcome_id'), OUTCOME_ID)
    assert.deepEqual(conflict.errors, [])
  })

  it('describes an error answer that is not problem+json', async (t) => {
    const { client } = await scripted(t, (_n, _r, response) => {
      response.writeHead(502, { 'content-type': 'text/html' })
      response.end('<html>bad gateway</html>')
    })
    const error = await client.outcomes.get(OUTCOME_ID).catch((e: unknown) => e)
    assert.ok(error instanceof ArbiterError)
    assert.equal(error.status, 502)
    assert.equal(error.type, 'about:blank')
    assert.match(error.detail, /bad gateway/)
  })

  it('raises ArbiterProtocolError for a 2xx answer that is not JSON', async (t) => {
    const { client } = await scripted(t, (_n, _r, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end('{"truncated":')
    })
    await assert.rejects(client.outcomes.get(OUTCOME_ID), ArbiterProtocolError)
  })

  it('sends the API key as a bearer token and JSON bodies as JSON', async (t) => {
    const { server, client } = await scripted(t, (_n, _r, response) => sendJson(response, 201, outcome))
    await client.outcomes.create({ subagent_id: 's', run_id: 'r', evidence })
    const [request] = server.requests
    assert.equal(request!.headers.authorization, 'Bearer arb_test')
    assert.match(String(request!.headers['content-type']), /^application\/json/)
    assert.deepEqual(JSON.parse(request!.body), { subagent_id: 's', run_id: 'r', evidence })
  })
})
