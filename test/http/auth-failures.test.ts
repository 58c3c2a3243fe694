import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { AuthFailureThrottle } from '../../src/http/auth-failure-throttle.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

/** Failed authentication is throttled per client address: guessing keys costs the guesser. */

const bogusKey = () => `arb_${randomBytes(32).toString('base64url')}`

async function listening(app: TestApp): Promise<string> {
  await app.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}`
}

async function get(base: string, authorization: string | null) {
  const response = await fetch(`${base}/v1/manifests?limit=1`, {
    headers: authorization === null ? {} : { authorization },
  })
  await response.arrayBuffer()
  return { status: response.status, retryAfter: response.headers.get('retry-after') }
}

describe('failed authentication per client address', () => {
  it('answers 429 + Retry-After past the limit of unknown keys, also to concurrent guesses', async (t) => {
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 5 } })
    const base = await listening(app)
    const answers = await Promise.all(Array.from({ length: 20 }, () => get(base, `Bearer ${bogusKey()}`)))
    const statuses = answers.map((answer) => answer.status).sort()
    assert.deepEqual(statuses, [...Array(5).fill(401), ...Array(15).fill(429)])
    for (const answer of answers.filter((a) => a.status === 429)) {
      const seconds = Number(answer.retryAfter)
      assert.ok(seconds >= 1 && seconds <= 60, `Retry-After ${answer.retryAfter}: the rest of the minute`)
    }
    // A valid key from the same address is never throttled by it.
    const dashboard = await app.key('dashboard')
    assert.equal((await get(base, `Bearer ${dashboard}`)).status, 200)
    // Another address is not held by this one's failures.
    const elsewhere = await app.request(bogusKey(), {
      method: 'GET',
      url: '/v1/manifests',
      remoteAddress: '192.0.2.7',
    })
    assert.equal(elsewhere.statusCode, 401)
  })

  it('counts revoked keys but not missing or malformed Authorization headers', async (t) => {
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 3 } })
    const base = await listening(app)
    for (const header of [null, 'Basic abc', 'Bearer', 'Bearer a b']) {
      for (let i = 0; i < 5; i++) assert.equal((await get(base, header)).status, 401, String(header))
    }
    const created = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/admin/keys',
      payload: { role: 'dashboard', label: 'soon revoked' },
    })
    const { id, key } = created.json<{ id: string; key: string }>()
    const revoked = await app.request(app.adminKey, { method: 'DELETE', url: `/v1/admin/keys/${id}` })
    assert.equal(revoked.statusCode, 204)
    for (let i = 0; i < 3; i++) assert.equal((await get(base, `Bearer ${key}`)).status, 401)
    const fourth = await get(base, `Bearer ${bogusKey()}`)
    assert.equal(fourth.status, 429, 'the three revoked-key requests counted; the keyless ones did not')
    assert.ok(Number(fourth.retryAfter) >= 1)
    assert.equal((await get(base, `Bearer ${app.adminKey}`)).status, 200)
  })

  it('is off at 0', async (t) => {
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 0 } })
    const base = await listening(app)
    const answers = await Promise.all(Array.from({ length: 80 }, () => get(base, `Bearer ${bogusKey()}`)))
    assert.ok(answers.every((answer) => answer.status === 401))
  })
})

describe('AuthFailureThrottle', () => {
  it('lets an address fail again once its minute has passed', () => {
    let now = 1_000_000
    const throttle = new AuthFailureThrottle(2, () => now)
    assert.equal(throttle.fail('a'), null)
    assert.equal(throttle.fail('a'), null)
    assert.equal(throttle.fail('a'), 60)
    now += 45_000
    assert.equal(throttle.fail('a'), 15, 'Retry-After is the rest of the minute')
    now += 15_000
    assert.equal(throttle.fail('a'), null)
  })

  it('keeps a bounded number of addresses', () => {
    const throttle = new AuthFailureThrottle(1, () => 0)
    for (let i = 0; i < 20_000; i++) throttle.fail(`10.0.${i >> 8}.${i & 255}`)
    assert.equal(throttle.size, 10_000)
  })
})
