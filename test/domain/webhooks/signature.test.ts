import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import {
  decodeSecret,
  encodeSecret,
  signatureOf,
  webhookHeaders,
} from '../../../src/domain/webhooks/signature.ts'

const BODY = '{"type":"manifest.issued","timestamp":"2026-01-05T10:00:00.000Z","data":{"é":"ü"}}'

describe('Standard Webhooks signing', () => {
  it('signs what the standardwebhooks library computes for the same id, time and body', () => {
    const secret = encodeSecret(randomBytes(32))
    const at = new Date('2026-01-05T10:00:00Z')
    const expected = new Webhook(secret).sign('msg_1', at, BODY)
    assert.equal(signatureOf(secret, 'msg_1', Math.floor(at.getTime() / 1000), BODY), expected)
  })

  it('lists one signature per secret, each verifying with its own secret alone', () => {
    const current = encodeSecret(randomBytes(32))
    const previous = encodeSecret(randomBytes(24))
    const timestamp = Math.floor(Date.now() / 1000)
    const headers = webhookHeaders([current, previous], 'evt_1', timestamp, BODY)
    assert.equal(headers['webhook-signature'].split(' ').length, 2)
    for (const secret of [current, previous]) {
      assert.deepEqual(new Webhook(secret).verify(BODY, headers), JSON.parse(BODY))
    }
    const stranger = encodeSecret(randomBytes(32))
    assert.throws(() => new Webhook(stranger).verify(BODY, headers))
    assert.throws(() => new Webhook(current).verify(`${BODY} `, headers))
    assert.throws(() =>
      new Webhook(current).verify(BODY, { ...headers, 'webhook-timestamp': String(timestamp - 1) }),
    )
    assert.throws(() => new Webhook(current).verify(BODY, { ...headers, 'webhook-id': 'evt_2' }))
  })

  it('encodes secrets of 24 to 64 bytes as whsec_<base64> and refuses other sizes', () => {
    for (const size of [24, 32, 64]) {
      const key = randomBytes(size)
      const secret = encodeSecret(key)
      assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/)
      assert.deepEqual(decodeSecret(secret), key)
    }
    assert.throws(() => encodeSecret(randomBytes(23)), RangeError)
    assert.throws(() => encodeSecret(randomBytes(65)), RangeError)
  })
})
