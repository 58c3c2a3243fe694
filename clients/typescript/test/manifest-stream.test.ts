import assert from 'node:assert/strict'
import type { ServerResponse } from 'node:http'
import { after, describe, it, type TestContext } from 'node:test'
import v8 from 'node:v8'
import vm from 'node:vm'
import {
  type ArbiterClient,
  ArbiterError,
  ArbiterProtocolError,
  createArbiterClient,
  isEvaluationPending,
  type ManifestEvent,
  verifyEnvelope,
} from '../src/index.ts'
import { EVIDENCE, startLiveArbiter } from './helpers/live.ts'
import { problem, type ReceivedRequest, sendJson, startScriptedServer } from './helpers/scripted-server.ts'
import { collect } from './helpers/stream-collector.ts'

async function decide(client: ArbiterClient, runId: string): Promise<string> {
  const outcome = await client.outcomes.create({ subagent_id: 'streamed', run_id: runId, evidence: EVIDENCE })
  await client.outcomes.interpret(outcome.outcome_id, {
    orchestrator_id: 'orch-a',
    outcome_interpretation: 'success',
    success_criterion: { require: ['exit_code == 0'] },
  })
  const result = await client.outcomes.evaluate(outcome.outcome_id)
  assert.ok(!isEvaluationPending(result))
  return result.manifest.manifest_id
}

describe('manifests.stream against a live Arbiter', async () => {
  const live = await startLiveArbiter({ after }, { config: { ssePollMs: 50 } })
  const orchestrator = live.client(await live.key('orchestrator', ['orch-a']))
  const dashboard = live.client(await live.key('dashboard'))

  it('yields each manifest issued after it opened, in log order, with its audit_seq as id', async () => {
    const stream = collect(dashboard)
    try {
      await stream.connected()
      const issued = [await decide(orchestrator, 'live-1'), await decide(orchestrator, 'live-2')]
      await stream.until(2)
      assert.deepEqual(
        stream.events.map((e) => e.envelope.manifest.manifest_id),
        issued,
      )
      const [first, second] = stream.events as [ManifestEvent, ManifestEvent]
      assert.ok(first.auditSeq < second.auditSeq)
      assert.equal(first.id, String(first.auditSeq))
      const jwks = await dashboard.jwks()
      for (const event of stream.events) {
        assert.equal((await verifyEnvelope(event.envelope, jwks)).auditSeq, event.auditSeq)
      }
      assert.deepEqual(stream.connections, [undefined])
    } finally {
      await stream.stop()
    }
  })

  it('starts after lastEventId: the manifests after it come first', async () => {
    const first = await decide(orchestrator, 'resume-1')
    const second = await decide(orchestrator, 'resume-2')
    const page = await dashboard.manifests.list({ limit: '500' })
    const firstSeq = page.items.find((e) => e.manifest.manifest_id === first)!.audit_seq!
    const stream = collect(dashboard, { lastEventId: firstSeq })
    try {
      await stream.until(1)
      assert.equal(stream.events[0]!.envelope.manifest.manifest_id, second)
      assert.deepEqual(stream.connections, [String(firstSeq)])
    } finally {
      await stream.stop()
    }
  })

  it('ends the iteration quietly when its signal aborts', async () => {
    const stream = collect(dashboard)
    await stream.connected()
    await stream.stop()
    assert.equal(stream.failure(), undefined)
  })

  it('throws ArbiterError for a refused key instead of reconnecting', async () => {
    const stream = collect(live.client('arb_not_a_key'))
    await assert.rejects(stream.until(1), ArbiterError)
    await stream.stop()
    const error = stream.failure()
    assert.ok(error instanceof ArbiterError, String(error))
    assert.equal(error.status, 401)
    assert.deepEqual(stream.connections, [])
  })
})

describe('manifests.stream reconnecting', () => {
  const envelope = (n: number) => ({
    manifest: { manifest_id: `m-${n}` },
    manifest_digest: 'sha256:x',
    jws: 'a.b.c',
  })
  const event = (n: number) => `event: manifest\nid: ${n}\ndata: ${JSON.stringify(envelope(n))}\n\n`
  const open = (response: ServerResponse, text: string) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' })
    response.write(`retry: 50\n: connected\n\n${text}`)
  }

  async function scriptedStream(
    t: TestContext,
    script: (n: number, request: ReceivedRequest, response: ServerResponse) => void,
  ) {
    const server = await startScriptedServer(script)
    t.after(() => server.close())
    const client = createArbiterClient({ baseUrl: server.baseUrl, apiKey: 'arb_test' })
    return { server, client }
  }

  it('reconnects with Last-Event-ID = the last id it yielded, and never yields an event twice', async (t) => {
    const { server, client } = await scriptedStream(t, (n, _request, response) => {
      if (n === 0) open(response, event(1) + event(2))
      // A server that resends what the client already has must not make it yield it twice.
      if (n === 1) open(response, event(2) + event(3))
      if (n >= 2) open(response, '')
      if (n < 2) response.end()
    })
    const stream = collect(client, { reconnectDelayMs: 20 })
    try {
      await stream.until(3)
      await stream.connected(3)
      assert.deepEqual(
        stream.events.map((e) => e.id),
        ['1', '2', '3'],
      )
      assert.deepEqual(stream.connections.slice(0, 3), [undefined, '2', '3'])
      assert.equal(server.requests[1]!.headers['last-event-id'], '2')
      assert.equal(server.requests[0]!.headers.authorization, 'Bearer arb_test')
    } finally {
      await stream.stop()
    }
  })

  it('resumes from a position the server states with an id-only block', async (t) => {
    const { client } = await scriptedStream(t, (n, _request, response) => {
      open(response, n === 0 ? 'id: 41\n\n' : '')
      if (n === 0) response.end()
    })
    const stream = collect(client, { lastEventId: 7, reconnectDelayMs: 20 })
    try {
      await stream.connected(2)
      assert.deepEqual(stream.connections.slice(0, 2), ['7', '41'])
    } finally {
      await stream.stop()
    }
  })

  it('waits what Retry-After asks when the server sheds load, then connects', async (t) => {
    const { server, client } = await scriptedStream(t, (n, _request, response) => {
      if (n === 0) sendJson(response, 503, problem(503, 'Service Unavailable'), { 'retry-after': '1' })
      else open(response, event(5))
    })
    const stream = collect(client, { reconnectDelayMs: 10 })
    try {
      await stream.until(1)
      const waited = server.requests[1]!.at - server.requests[0]!.at
      assert.ok(waited >= 995 && waited < 1_500, `reconnected after ${waited} ms`)
    } finally {
      await stream.stop()
    }
  })

  it('replaces a connection that stays silent past idleTimeoutMs', async (t) => {
    const { server, client } = await scriptedStream(t, (n, _request, response) => {
      if (n === 0)
        open(response, event(1)) // …and then nothing, not even a heartbeat
      else open(response, event(2))
    })
    const stream = collect(client, { idleTimeoutMs: 300, reconnectDelayMs: 10 })
    try {
      await stream.until(2)
      assert.equal(server.requests[1]!.headers['last-event-id'], '1')
    } finally {
      await stream.stop()
    }
  })

  it('ends when its signal aborts while waiting for the next event, even after a garbage collection', async (t) => {
    v8.setFlagsFromString('--expose-gc')
    const collectGarbage = vm.runInNewContext('gc') as () => void
    const { client } = await scriptedStream(t, (_n, _request, response) => open(response, event(1)))
    const stream = collect(client)
    await stream.until(1)
    for (let i = 0; i < 3; i++) {
      collectGarbage()
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const stopped = stream.stop().then(() => 'stopped')
    const outcome = await Promise.race([
      stopped,
      new Promise((resolve) => setTimeout(resolve, 2_000, 'hung')),
    ])
    assert.equal(outcome, 'stopped')
  })

  it('refuses a manifest event without an id: it could not be resumed from', async (t) => {
    const { client } = await scriptedStream(t, (_n, _request, response) => {
      open(response, `event: manifest\ndata: ${JSON.stringify(envelope(1))}\n\n`)
    })
    const stream = collect(client)
    await assert.rejects(stream.until(1), ArbiterProtocolError)
    await stream.stop()
  })
})
