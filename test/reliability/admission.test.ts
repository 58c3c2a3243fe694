import assert from 'node:assert/strict'
import { once } from 'node:events'
import { request as httpRequest } from 'node:http'
import net from 'node:net'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildTestApp } from '../helpers/app.ts'

/** Admission control must give every slot back, whatever way a client leaves. */
describe('admission control', () => {
  async function listeningApp(t: Parameters<typeof buildTestApp>[0]) {
    const app = await buildTestApp(t, { config: { dbPoolMax: 2, overload: { maxDbWaiting: 2 } } })
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.app.server.address() as net.AddressInfo).port
    const limit = 2 + 2
    const burst = async () => {
      const answers = await Promise.all(
        Array.from({ length: limit }, () =>
          fetch(`http://127.0.0.1:${port}/v1/admin/keys?limit=1`, {
            headers: { authorization: `Bearer ${app.adminKey}` },
          }),
        ),
      )
      return answers.map((r) => r.status)
    }
    return { app, port, burst }
  }

  it('releases the slots of pipelined requests whose client hung up first', async (t) => {
    const { app, port, burst } = await listeningApp(t)
    const request = `GET /v1/admin/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${app.adminKey}\r\n\r\n`
    for (let round = 0; round < 20; round++) {
      const socket = net.connect(port, '127.0.0.1')
      socket.on('error', () => {})
      await once(socket, 'connect')
      socket.write(request.repeat(5))
      await sleep(2)
      socket.destroy()
    }
    await sleep(300)
    assert.deepEqual(await burst(), [200, 200, 200, 200], 'no slot leaked')
  })

  it('does not count the manifest stream however its path is spelled', async (t) => {
    const { app, port, burst } = await listeningApp(t)
    const streams = [
      '/v1/manifests/strea%6D',
      '/v1/manifests/%73tream',
      '/v1/manifests/stream',
      '/v1/manifests/stream',
    ]
    const open = streams.map((path) => {
      const req = httpRequest(`http://127.0.0.1:${port}${path}`, {
        headers: { authorization: `Bearer ${app.adminKey}` },
      })
      req.on('error', () => {})
      req.end()
      return req
    })
    t.after(() => {
      for (const req of open) req.destroy()
    })
    const statuses = await Promise.all(
      open.map((req) => once(req, 'response').then(([res]) => res.statusCode)),
    )
    assert.deepEqual(statuses, [200, 200, 200, 200])
    // Each new stream reads the log's head once; let those reads leave the pool's queue (a stream holds no slot,
    // but its opening queries briefly queue like any other on the small pool of this test).
    for (let waited = 0; app.app.db.waitingCount > 0 && waited < 5_000; waited += 10) await sleep(10)
    assert.deepEqual(await burst(), [200, 200, 200, 200], 'streams hold no admission slot')
  })
})

/** Writes a request's headers and the first byte of a body it never finishes, one byte a second. */
function slowBody(port: number, path: string, authorization?: string) {
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', () => {})
  const received: Buffer[] = []
  socket.on('data', (chunk) => received.push(chunk))
  let closed = false
  socket.on('close', () => {
    closed = true
  })
  socket.once('connect', () => {
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n` +
        `${authorization ? `Authorization: Bearer ${authorization}\r\n` : ''}\r\n{`,
    )
  })
  const drip = setInterval(() => {
    if (socket.writable) socket.write(' ')
  }, 1_000)
  return {
    socket,
    closed: () => closed,
    response: () => Buffer.concat(received).toString('latin1'),
    stop: () => {
      clearInterval(drip)
      socket.destroy()
    },
  }
}

describe('admission control and unfinished requests', () => {
  it('gives no slot to a request whose body has not arrived: slow bodies cannot make readers answer 503', async (t) => {
    // 22 slots (pool 2 + queue 20): fewer than the unfinished requests with a valid key.
    const app = await buildTestApp(t, { config: { dbPoolMax: 2, overload: { maxDbWaiting: 20 } } })
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.app.server.address() as net.AddressInfo).port
    const orchestrator = await app.key('orchestrator', ['orch-a'])
    const dashboard = await app.key('dashboard')
    // Unknown routes, no key, a bad key, and a valid orchestrator key dribbling an outcome.
    const unrouted = Array.from({ length: 8 }, () => slowBody(port, '/nope'))
    const keyless = [
      ...Array.from({ length: 8 }, () => slowBody(port, '/v1/outcomes')),
      ...Array.from({ length: 2 }, () => slowBody(port, '/v1/outcomes', 'arb_not-a-key')),
    ]
    // Opened six at a time, each batch once its key lookups are done, so the lookups themselves (which count while
    // they run) never fill the slots.
    let acquired = 0
    app.app.db.on('acquire', () => {
      acquired += 1
    })
    const keyed: ReturnType<typeof slowBody>[] = []
    for (let batch = 0; batch < 4; batch++) {
      const before = acquired
      for (let i = 0; i < 6; i++) keyed.push(slowBody(port, '/v1/outcomes', orchestrator))
      for (let waited = 0; acquired - before < 6 && waited < 20_000; waited += 20) await sleep(20)
      for (let waited = 0; app.app.db.idleCount < app.app.db.totalCount && waited < 20_000; waited += 20) {
        await sleep(20)
      }
    }
    // Stopped before the app closes: a closing server no longer times requests out.
    try {
      // Those without a route or a valid key are answered from their headers alone, and their connection closed.
      const unanswered = () => [...unrouted, ...keyless].filter((s) => !s.closed())
      for (let waited = 0; unanswered().length > 0 && waited < 20_000; waited += 50) await sleep(50)
      assert.equal(unanswered().length, 0, 'every request without a route or a valid key was answered')
      for (const s of unrouted) assert.match(s.response(), /^HTTP\/1\.1 404 .*application\/problem\+json/s)
      for (const s of keyless) assert.match(s.response(), /^HTTP\/1\.1 401 .*application\/problem\+json/s)
      // The orchestrator's requests are still arriving: they wait for their bodies, holding nothing.
      for (const s of keyed) assert.equal(s.response(), '', 'still reading its body')

      const read = () =>
        fetch(`http://127.0.0.1:${port}/v1/manifests?limit=1`, {
          headers: { authorization: `Bearer ${dashboard}` },
        }).then((r) => r.status)
      assert.deepEqual(await Promise.all(Array.from({ length: 6 }, read)), Array(6).fill(200))
      for (const s of keyed) assert.equal(s.closed(), false, 'the slow senders were not simply cut off')
    } finally {
      for (const s of [...unrouted, ...keyless, ...keyed]) s.stop()
    }
  })
})
