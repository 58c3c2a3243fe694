import assert from 'node:assert/strict'
import { once } from 'node:events'
import net from 'node:net'
import { describe, it } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

describe('errors met before a request exists', () => {
  it('writes nothing into a response already under way, and answers broken HTTP on a fresh connection', async (t) => {
    const app = await buildTestApp(t, { config: { sseHeartbeatMs: 60_000 } })
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.app.server.address() as net.AddressInfo).port
    const dashboard = await app.key('dashboard')

    // A stream: its headers are sent at once and its body goes on; then the client sends bytes that are no HTTP.
    const socket = net.connect(port, '127.0.0.1')
    await once(socket, 'connect')
    t.after(() => socket.destroy())
    let received = ''
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
    })
    socket.on('error', () => {})
    socket.write(`GET /v1/manifests/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${dashboard}\r\n\r\n`)
    while (!received.includes('\r\n\r\n')) await once(socket, 'data')
    assert.match(received, /^HTTP\/1\.1 200 /)
    const closed = once(socket, 'close')
    socket.write('\x00\x01 not http at all\r\n\r\n')
    await closed
    assert.doesNotMatch(received, /HTTP\/1\.1 400/, 'no answer is written into the stream')

    // The same bytes on a connection with no response under way are answered with a problem.
    const fresh = net.connect(port, '127.0.0.1')
    await once(fresh, 'connect')
    let answer = ''
    fresh.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1')
    })
    fresh.on('error', () => {})
    const freshClosed = once(fresh, 'close')
    fresh.write('\x00\x01 not http at all\r\n\r\n')
    await freshClosed
    assert.match(answer, /^HTTP\/1\.1 400 /)
    assert.match(answer, /content-type: application\/problem\+json/i)
  })

  it('writes nothing into a streaming response while a pipelined response is queued behind it', async (t) => {
    const app = await buildTestApp(t, { config: { sseHeartbeatMs: 60_000 } })
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.app.server.address() as net.AddressInfo).port
    const dashboard = await app.key('dashboard')

    const socket = net.connect(port, '127.0.0.1')
    await once(socket, 'connect')
    t.after(() => socket.destroy())
    let received = ''
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
    })
    socket.on('error', () => {})
    socket.write(`GET /v1/manifests/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${dashboard}\r\n\r\n`)
    while (!received.includes('\r\n\r\n')) await once(socket, 'data')
    assert.match(received, /^HTTP\/1\.1 200 /)
    // In one write: a valid request, queued behind the stream, then bytes that are no HTTP. The latest response on
    // the connection is then the queued one, not yet begun, while the stream's is still being written.
    const closed = once(socket, 'close')
    socket.write(
      `GET /v1/manifests?limit=5 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${dashboard}\r\n\r\n` +
        '\x00\x01 not http at all\r\n\r\n',
    )
    await closed
    assert.doesNotMatch(received, /HTTP\/1\.1 400/, 'no answer is written into the stream')
  })
})
