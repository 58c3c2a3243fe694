import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { Webhook } from 'standardwebhooks'
import {
  ArbiterVerificationError,
  type VerificationCheck,
  verifyWebhook,
  type WebhookEvent,
} from '../src/index.ts'

const NOW = 1_796_000_000
const AT = new Date(NOW * 1000)

function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/** A delivery as the Standard Webhooks reference library signs it, with one signature per secret. */
function signed(secrets: readonly string[], body: string, id = 'evt_01', at = AT): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' '),
  }
}

function refusal(fn: () => unknown): VerificationCheck {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof ArbiterVerificationError, String(err))
    return err.check
  }
  assert.fail('the delivery was accepted')
}

const BODY = JSON.stringify({
  type: 'manifest.issued',
  timestamp: '2026-12-01T00:00:00Z',
  data: { manifest: { verdict: 'AGREED', note: 'é ☃' } },
})

describe('verifyWebhook', () => {
  it('accepts what the standardwebhooks library signs and returns the parsed payload', () => {
    const secret = newSecret()
    const event = verifyWebhook(signed([secret], BODY), BODY, secret, { now: AT })
    assert.deepEqual(event, JSON.parse(BODY))
    assert.equal(event.type, 'manifest.issued')
  })

  it('accepts the body as bytes and the headers in any capitalisation or as a fetch Headers', () => {
    const secret = newSecret()
    const headers = signed([secret], BODY)
    const shouted = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]))
    const bytes = new TextEncoder().encode(BODY)
    assert.deepEqual(verifyWebhook(shouted, bytes, secret, { now: AT }), JSON.parse(BODY))
    assert.deepEqual(verifyWebhook(new Headers(headers), bytes, secret, { now: AT }), JSON.parse(BODY))
  })

  it('agrees with the reference library on random ids, bodies and secrets', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
        fc.json(),
        fc.uint8Array({ minLength: 24, maxLength: 64 }),
        (id, body, key) => {
          const secret = `whsec_${Buffer.from(key).toString('base64')}`
          const headers = signed([secret], body, id)
          assert.deepEqual(verifyWebhook(headers, body, secret, { now: AT }), JSON.parse(body))
        },
      ),
      { numRuns: 200 },
    )
  })

  it('verifies with either secret after a rotation, when the delivery carries both signatures', () => {
    const previous = newSecret()
    const current = newSecret()
    const headers = signed([previous, current], BODY, 'evt_rotated', new Date())
    assert.equal(headers['webhook-signature']?.split(' ').length, 2)
    for (const secret of [previous, current]) {
      assert.deepEqual(verifyWebhook(headers, BODY, secret), JSON.parse(BODY))
      assert.deepEqual(new Webhook(secret).verify(BODY, headers), JSON.parse(BODY))
    }
    assert.equal(
      refusal(() => verifyWebhook(headers, BODY, newSecret())),
      'signature',
    )
  })

  it('refuses a tampered body, id, timestamp or signature, as the reference library does', () => {
    const secret = newSecret()
    const headers = signed([secret], BODY, 'evt_01', new Date())
    const signature = headers['webhook-signature'] ?? ''
    const flipped = Buffer.from(signature.slice(3), 'base64')
    flipped[0] = (flipped[0] ?? 0) ^ 1
    const later = String(Number(headers['webhook-timestamp']) + 1)
    const cases: [string, Record<string, string>, string][] = [
      ['body', headers, BODY.replace('AGREED', 'HALTED')],
      ['body with a trailing newline', headers, `${BODY}\n`],
      ['id', { ...headers, 'webhook-id': 'evt_02' }, BODY],
      ['timestamp', { ...headers, 'webhook-timestamp': later }, BODY],
      ['signature', { ...headers, 'webhook-signature': `v1,${flipped.toString('base64')}` }, BODY],
      ['version', { ...headers, 'webhook-signature': `v2,${signature.slice(3)}` }, BODY],
      ['truncated signature', { ...headers, 'webhook-signature': signature.slice(0, -4) }, BODY],
    ]
    for (const [what, tampered, body] of cases) {
      assert.equal(
        refusal(() => verifyWebhook(tampered, body, secret)),
        'signature',
        what,
      )
      assert.throws(() => new Webhook(secret).verify(body, tampered), what)
    }
  })

  it('refuses a timestamp more than the tolerance away from now, in either direction', () => {
    const secret = newSecret()
    const headers = signed([secret], BODY)
    const ok = (now: number, toleranceSeconds?: number) =>
      verifyWebhook(headers, BODY, secret, {
        now: now * 1000,
        ...(toleranceSeconds ? { toleranceSeconds } : {}),
      })
    assert.ok(ok(NOW + 300))
    assert.ok(ok(NOW - 300))
    assert.equal(
      refusal(() => ok(NOW + 301)),
      'timestamp',
    )
    assert.equal(
      refusal(() => ok(NOW - 301)),
      'timestamp',
    )
    assert.ok(ok(NOW + 3600, 3600))
    assert.equal(
      refusal(() => verifyWebhook(headers, BODY, secret)),
      'timestamp',
      'a delivery signed long ago is a replay today',
    )
  })

  it('refuses missing headers, a malformed timestamp or secret, and a signed body that is not JSON', () => {
    const secret = newSecret()
    const headers = signed([secret], BODY)
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const { [name]: _, ...rest } = headers
      assert.equal(
        refusal(() => verifyWebhook(rest, BODY, secret, { now: AT })),
        'malformed',
        name,
      )
    }
    for (const timestamp of ['', '1e9', '-1', ' 1796000000', '１７９６']) {
      assert.equal(
        refusal(() =>
          verifyWebhook({ ...headers, 'webhook-timestamp': timestamp }, BODY, secret, { now: AT }),
        ),
        'malformed',
        timestamp,
      )
    }
    assert.equal(
      refusal(() => verifyWebhook(headers, BODY, 'whsec_not base64!', { now: AT })),
      'malformed',
    )
    const text = 'not json'
    assert.equal(
      refusal(() => verifyWebhook(signed([secret], text), text, secret, { now: AT })),
      'malformed',
    )
  })

  it('signs as the shared vectors the Python client is tested against say', () => {
    interface Vector {
      id: string
      timestamp: number
      body: string
      signature: string
    }
    const vectors = JSON.parse(
      readFileSync(new URL('../../python/tests/vectors/standard-webhooks.json', import.meta.url), 'utf8'),
    ) as { cases: (Vector & { secret: string })[]; rotation: Vector & { secrets: string[] } }
    const headersOf = (vector: Vector) => ({
      'webhook-id': vector.id,
      'webhook-timestamp': String(vector.timestamp),
      'webhook-signature': vector.signature,
    })
    for (const vector of vectors.cases) {
      const at = new Date(vector.timestamp * 1000)
      assert.equal(new Webhook(vector.secret).sign(vector.id, at, vector.body), vector.signature, vector.id)
      if (vector.body !== '') verifyWebhook(headersOf(vector), vector.body, vector.secret, { now: at })
    }
    const { rotation } = vectors
    const at = new Date(rotation.timestamp * 1000)
    assert.equal(
      rotation.secrets.map((secret) => new Webhook(secret).sign(rotation.id, at, rotation.body)).join(' '),
      rotation.signature,
    )
    for (const secret of rotation.secrets)
      verifyWebhook(headersOf(rotation), rotation.body, secret, { now: at })
  })
})

describe('verifyWebhook in a Node receiver', () => {
  const received: { headers: IncomingHttpHeaders; body: Buffer }[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) })
      res.writeHead(204).end()
    })
  })
  after(() => server.close())

  it("verifies Node's IncomingHttpHeaders and the raw body as a receiver gets them", async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const secret = newSecret()
    const now = new Date()
    const response = await fetch(`http://127.0.0.1:${port}/hook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signed([secret], BODY, 'evt_live', now) },
      body: BODY,
    })
    assert.equal(response.status, 204)
    const [delivery] = received
    assert.ok(delivery)
    const event: WebhookEvent = verifyWebhook(delivery.headers, delivery.body, secret)
    assert.equal(event.type, 'manifest.issued')
  })
})
