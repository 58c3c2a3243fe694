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
