import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { HostLookup } from '../../src/probes/ssrf-guard.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { WebhookReceiver } from '../helpers/webhook-receiver.ts'

/*
 * DNS rebinding: a name that answers a public address when the webhook is registered and a local one when it is
 * called. The name is resolved through the app's lookup seam, so the test decides every answer; the name itself
 * exists in no real DNS, so a socket opened to it by name (a second, unvetted lookup) could not connect at all.
 */

/** A public unicast address (example.com's), never connected to here. */
const PUBLIC = '93.184.215.14'
const NAME = 'rebind.arbiter.test'

/** A resolver answering the given addresses, one per call (the last one repeated), that records each call. */
function scriptedLookup(...answers: string[][]) {
  const calls: string[] = []
  const lookup: HostLookup = async (host) => {
    calls.push(host)
    const addresses = answers[Math.min(calls.length - 1, answers.length - 1)]!
    return addresses.map((address) => ({ address, family: 4 }))
  }
  return { lookup, calls }
}

async function tryRegister(t: TestApp, url: string) {
  return t.request(t.adminKey, {
    method: 'POST',
    url: '/v1/webhooks',
    payload: { url, events: ['manifest.issued'] },
  })
}

/** Sends a test event and waits for its first attempt to be recorded. */
async function firstAttempt(t: TestApp, webhookId: string) {
  const test = await t.request(t.adminKey, { method: 'POST', url: `/v1/webhooks/${webhookId}/test` })
  assert.equal(test.statusCode, 202, test.body)
  for (;;) {
    const listed = await t.request(t.adminKey, { method: 'GET', url: `/v1/webhooks/${webhookId}/deliveries` })
    const [delivery] = listed.json().items as {
      status: string
      attempts: number
      last_status_code: number | null
      last_error: string | null
    }[]
    if (delivery !== undefined && delivery.attempts >= 1) return delivery
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

const ONE_ATTEMPT = { pollMs: 20, retryScheduleMs: [60_000] }

describe('DNS rebinding', () => {
  it('refuses the attempt when the name that was public at registration resolves to loopback at delivery', {
    timeout: 30_000,
  }, async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const dns = scriptedLookup([PUBLIC], ['127.0.0.1'])
    const app = await buildTestApp(t, {
      config: { webhooks: { allowPrivate: false, lookup: dns.lookup, ...ONE_ATTEMPT } },
    })
    const url = receiver.url.replace('127.0.0.1', NAME)
    const created = await tryRegister(app, url)
    assert.equal(created.statusCode, 201, created.body)
    assert.deepEqual(dns.calls, [NAME], 'looked up once at registration')
    const delivery = await firstAttempt(app, created.json().webhook_id)
    assert.equal(delivery.status, 'pending')
    assert.equal(delivery.last_status_code, null)
    assert.match(
      delivery.last_error ?? '',
      new RegExp(`${NAME.replace(/\./g, '\\.')} resolves to 127\\.0\\.0\\.1`),
    )
    assert.match(delivery.last_error ?? '', /ARBITER_WEBHOOK_ALLOW_PRIVATE/)
    assert.equal(receiver.requests.length, 0, 'no request reached the local receiver')
    assert.deepEqual(dns.calls, [NAME, NAME], 'looked up once more, for the connection')
  })

  it('opens the socket to the address it vetted, never looking the name up a second time', {
    timeout: 30_000,
  }, async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    // Private addresses allowed, so that the vetted answer may be the local receiver's; any later answer points
    // nowhere (TEST-NET-1), and the name itself resolves nowhere outside this resolver.
    const dns = scriptedLookup(['127.0.0.1'], ['192.0.2.1'])
    const app = await buildTestApp(t, {
      config: { webhooks: { allowPrivate: true, lookup: dns.lookup, ...ONE_ATTEMPT } },
    })
    const created = await tryRegister(app, receiver.url.replace('127.0.0.1', NAME))
    assert.equal(created.statusCode, 201, created.body)
    const delivery = await firstAttempt(app, created.json().webhook_id)
    assert.equal(delivery.status, 'succeeded', delivery.last_error ?? '')
    assert.equal(receiver.requests.length, 1)
    assert.match(String(receiver.requests[0]!.headers.host), new RegExp(`^${NAME.replace(/\./g, '\\.')}:`))
    assert.deepEqual(dns.calls, [NAME], 'one lookup, for the one connection')
  })

  it('refuses to register, or move a webhook to, a name that resolves to a non-public address', {
    timeout: 30_000,
  }, async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const dns = scriptedLookup([PUBLIC], ['127.0.0.1'], [PUBLIC, '10.0.0.7'], [PUBLIC])
    const app = await buildTestApp(t, {
      config: { webhooks: { allowPrivate: false, deliver: false, lookup: dns.lookup } },
    })
    const url = `https://${NAME}/hook`
    const accepted = await tryRegister(app, url)
    assert.equal(accepted.statusCode, 201, accepted.body)
    const loopback = await tryRegister(app, url)
    assert.equal(loopback.statusCode, 400, loopback.body)
    assert.match(loopback.json().detail, /resolves to 127\.0\.0\.1/)
    const moved = await app.request(app.adminKey, {
      method: 'PATCH',
      url: `/v1/webhooks/${accepted.json().webhook_id}`,
      payload: { url: `https://${NAME}/elsewhere` },
    })
    assert.equal(moved.statusCode, 400, moved.body)
    assert.match(moved.json().detail, /resolves to 10\.0\.0\.7/)
    assert.equal((await tryRegister(app, url)).statusCode, 201)
    assert.equal(dns.calls.length, 4)
  })

  it('takes a name that does not resolve (yet): it is resolved again at every attempt', {
    timeout: 30_000,
  }, async (t) => {
    const lookup: HostLookup = async () => {
      throw Object.assign(new Error('no such name'), { code: 'ENOTFOUND' })
    }
    const app = await buildTestApp(t, {
      config: { webhooks: { allowPrivate: false, deliver: false, lookup } },
    })
    assert.equal((await tryRegister(app, `https://${NAME}/hook`)).statusCode, 201)
  })
})
