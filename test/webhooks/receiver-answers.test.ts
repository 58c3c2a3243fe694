import assert from 'node:assert/strict'
import { promises as dns } from 'node:dns'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { hostname } from 'node:os'
import { describe, it, type TestContext } from 'node:test'
import { isPublicUnicast } from '../../src/probes/ssrf-guard.ts'
import { RESPONSE_BODY_LIMIT } from '../../src/webhooks/delivery-worker.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { WebhookReceiver } from '../helpers/webhook-receiver.ts'

/*
 * What an attempt does with the receiver's answer, against real receivers on local ports: a redirect is not
 * followed, a long body is read only up to its bound, and a name that resolves to a loopback address is refused
 * (at the attempt too: dns-rebinding.test.ts). Each webhook gets one attempt (the next is a minute away), started
 * by a test event.
 */

const ONE_ATTEMPT = { pollMs: 20, retryScheduleMs: [60_000] }

interface Delivery {
  status: string
  attempts: number
  last_status_code: number | null
  last_error: string | null
}

async function firstAttempt(t: TestApp, url: string): Promise<Delivery> {
  const created = await t.request(t.adminKey, {
    method: 'POST',
    url: '/v1/webhooks',
    payload: { url, events: ['manifest.issued'] },
  })
  assert.equal(created.statusCode, 201, created.body)
  const id = created.json().webhook_id as string
  const test = await t.request(t.adminKey, { method: 'POST', url: `/v1/webhooks/${id}/test` })
  assert.equal(test.statusCode, 202, test.body)
  for (;;) {
    const listed = await t.request(t.adminKey, { method: 'GET', url: `/v1/webhooks/${id}/deliveries` })
    const [delivery] = listed.json().items as Delivery[]
    if (delivery !== undefined && delivery.attempts >= 1) return delivery
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

async function listen(t: TestContext, server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    server.closeAllConnections()
    server.close()
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
}

describe("an attempt and the receiver's answer", () => {
  it('does not follow a redirect: the attempt fails with its status and the target is never asked', async (t) => {
    const target = await WebhookReceiver.start()
    t.after(() => target.close())
    let asked = 0
    const redirecting = await listen(
      t,
      createServer((req, res) => {
        asked++
        req.resume()
        res.writeHead(307, { location: target.url }).end()
      }),
    )
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, ...ONE_ATTEMPT } } })
    const delivery = await firstAttempt(app, redirecting)
    assert.equal(asked, 1)
    assert.equal(delivery.status, 'pending')
    assert.equal(delivery.last_status_code, 307)
    assert.equal(delivery.last_error, 'HTTP 307')
    assert.equal(target.requests.length, 0)
  })

  it('reads a long answer only up to its bound, and a 2xx still succeeds', async (t) => {
    const total = 32 * 1024 * 1024
    const chunk = Buffer.alloc(64 * 1024, 'x')
    let written = 0
    let closed: () => void
    const connectionClosed = new Promise<void>((resolve) => {
      closed = resolve
    })
    const long = await listen(
      t,
      createServer((req, res) => {
        req.resume()
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(total) })
        res.on('close', () => closed())
        const more = () => {
          while (written < total && !res.destroyed) {
            written += chunk.length
            if (!res.write(chunk)) return void res.once('drain', more)
          }
          res.end()
        }
        more()
      }),
    )
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: true, ...ONE_ATTEMPT } } })
    const delivery = await firstAttempt(app, long)
    assert.equal(delivery.status, 'succeeded')
    assert.equal(delivery.last_status_code, 200)
    await connectionClosed
    // Arbiter dropped the connection after RESPONSE_BODY_LIMIT bytes: the receiver could not send it all (what
    // it did send beyond the bound sat in socket buffers, never in Arbiter's memory).
    assert.ok(RESPONSE_BODY_LIMIT < total)
    assert.ok(written < total, `the receiver wrote all ${written} bytes`)
  })

  it('refuses at registration a name that resolves to a loopback address through the system resolver', async (t) => {
    // This machine's own name resolves through the hosts file: to 127.0.0.1 on most machines and containers.
    const name = hostname()
    const addresses = await dns.lookup(name, { all: true }).catch(() => [])
    if (addresses.length === 0 || addresses.some((answer) => isPublicUnicast(answer.address))) {
      t.skip(`${name} resolves to a public address here, or to none`)
      return
    }
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const app = await buildTestApp(t, { config: { webhooks: { allowPrivate: false, ...ONE_ATTEMPT } } })
    const created = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: receiver.url.replace('127.0.0.1', name), events: ['manifest.issued'] },
    })
    assert.equal(created.statusCode, 400, created.body)
    assert.match(created.json().detail, new RegExp(`${name} resolves to`))
    assert.match(created.json().detail, /ARBITER_WEBHOOK_ALLOW_PRIVATE/)
    assert.equal(receiver.requests.length, 0)
  })
})
