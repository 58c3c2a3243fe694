import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import { loggerOptions } from '../../src/logger.ts'
import { buildTestApp } from '../helpers/app.ts'

/** A pino destination that keeps every line the app logs, parsed. */
function captureLogs() {
  const lines: Record<string, unknown>[] = []
  let text = ''
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString()
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line))
      done()
    },
  })
  return { lines, text: () => text, stream }
}

const DEBUG = 20
const INFO = 30

describe('request logs', () => {
  async function loggingApp(t: Parameters<typeof buildTestApp>[0]) {
    const logs = captureLogs()
    const app = await buildTestApp(t, {
      logger: { ...loggerOptions({ logLevel: 'debug' }), stream: logs.stream },
    })
    return { ...app, logs }
  }
  const requestLines = (lines: Record<string, unknown>[]) => lines.filter((line) => 'status' in line)

  it('gives each request an id of its own; a client x-request-id is logged beside it as clientRequestId', async (t) => {
    const { request, adminKey, logs } = await loggingApp(t)
    const first = await request(adminKey, {
      method: 'GET',
      url: '/v1/admin/keys',
      headers: { 'x-request-id': 'same-id' },
    })
    const second = await request(adminKey, {
      method: 'GET',
      url: '/v1/admin/keys',
      headers: { 'x-request-id': 'same-id' },
    })
    const lines = requestLines(logs.lines)
    assert.equal(lines.length, 2, JSON.stringify(logs.lines))
    const [a, b] = lines as [Record<string, unknown>, Record<string, unknown>]
    assert.notEqual(a.reqId, b.reqId, 'two requests never share a log id')
    assert.equal(a.clientRequestId, 'same-id')
    assert.equal(b.clientRequestId, 'same-id')
    assert.equal(a.reqId, first.headers['x-request-id'], 'the answer names the id its log line carries')
    assert.equal(b.reqId, second.headers['x-request-id'])
    for (const line of logs.lines) assert.notEqual(line.reqId, 'same-id')
    // An x-request-id that is no sane token is not logged at all.
    await request(adminKey, { method: 'GET', url: '/v1/admin/keys', headers: { 'x-request-id': 'a b"c' } })
    assert.equal(requestLines(logs.lines)[2]?.clientRequestId, undefined)
  })

  it('logs one line per request at info, health and metrics at debug, and never a key', async (t) => {
    const { request, adminKey, logs } = await loggingApp(t)
    const created = await request(adminKey, {
      method: 'POST',
      url: '/v1/admin/keys',
      payload: { role: 'dashboard', label: 'logged' },
    })
    assert.equal(created.statusCode, 201)
    const dashboardKey = created.json().key as string
    await request(dashboardKey, { method: 'GET', url: '/v1/admin/keys?limit=1' })
    await request(null, { method: 'GET', url: '/healthz' })
    await request(null, { method: 'GET', url: '/readyz' })
    await request(null, { method: 'GET', url: '/metrics' })
    await request('arb_not-a-real-key-but-secret', { method: 'GET', url: '/v1/manifests' })

    // Background work (the log's sequencer) may log too; every line about a request is a request's one line.
    const lines = logs.lines.filter((line) => line.reqId !== undefined)
    assert.equal(lines.length, 6, `one line per request: ${JSON.stringify(lines)}`)
    assert.equal(new Set(lines.map((line) => line.reqId)).size, 6)
    const [post, forbidden, health, ready, metrics, unauthorized] = lines
    assert.equal(post?.level, INFO)
    assert.equal(post?.method, 'POST')
    assert.equal(post?.url, '/v1/admin/keys')
    assert.equal(post?.status, 201)
    assert.equal(typeof post?.durationMs, 'number')
    assert.match(String(post?.reqId), /^[0-9a-f-]{36}$/)
    assert.equal(forbidden?.status, 403)
    assert.equal(forbidden?.url, '/v1/admin/keys', 'the path, without the query')
    assert.equal(forbidden?.problem, 'urn:arbiter:problem:forbidden', 'an error answer names its problem')
    for (const line of [health, ready, metrics]) assert.equal(line?.level, DEBUG, JSON.stringify(line))
    assert.equal(unauthorized?.status, 401)
    for (const secret of [adminKey, dashboardKey, 'arb_not-a-real-key-but-secret']) {
      assert.ok(!logs.text().includes(secret), 'no key is ever logged')
    }
    assert.ok(!/authorization/i.test(logs.text()), 'no headers are logged')
  })

  it('writes JSON lines, or pino-pretty lines when asked to (stdout is a terminal)', async () => {
    assert.equal(loggerOptions({ logLevel: 'info' }).transport, undefined)
    const pretty = loggerOptions({ logLevel: 'info' }, { pretty: true })
    assert.equal((pretty.transport as { target: string }).target, 'pino-pretty')
    // The target resolves from the app, as pino's worker will resolve it.
    const { prettyFactory } = (await import('pino-pretty')) as unknown as {
      prettyFactory: (options: object) => (line: string) => string
    }
    const format = prettyFactory({ colorize: false })
    const line = format(`${JSON.stringify({ level: 30, time: 0, msg: 'request', status: 200 })}\n`)
    assert.match(line, /INFO.*request/)
  })
})
