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

/**
 * Puts a wrapper in front of the app's pool that counts the statements reading `api_keys`; every statement still
 * runs on the real database. (Counting pool checkouts instead would also count the log's background work.)
 */
function countKeyLookups(app: TestApp): { readonly count: number } {
  const pool = app.app.services.db
  const counter = { count: 0 }
  const query = (...args: unknown[]) => {
    const statement = args[0]
    const text = typeof statement === 'string' ? statement : (statement as { text: string }).text
    if (/\bapi_keys\b/.test(text)) counter.count++
    return (pool.query as (...queryArgs: unknown[]) => unknown).apply(pool, args)
  }
  app.app.services.db = new Proxy(pool, {
    get(target, property) {
      if (property === 'query') return query
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return counter
}

describe('failed authentication per client address', () => {
  it('answers 429 + Retry-After past the limit of unknown keys, also to concurrent guesses', async (t) => {
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 5, keyCache: 'local' } })
    const base = await listening(app)
    const dashboard = await app.key('dashboard')
    assert.equal((await get(base, `Bearer ${dashboard}`)).status, 200)
    const answers = await Promise.all(Array.from({ length: 20 }, () => get(base, `Bearer ${bogusKey()}`)))
    const statuses = answers.map((answer) => answer.status).sort()
    assert.deepEqual(statuses, [...Array(5).fill(401), ...Array(15).fill(429)])
    for (const answer of answers.filter((a) => a.status === 429)) {
      const seconds = Number(answer.retryAfter)
      assert.ok(seconds >= 1 && seconds <= 60, `Retry-After ${answer.retryAfter}: the rest of the minute`)
    }
    // A valid key this replica knows, from the same address, is not throttled by it.
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
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 3, keyCache: 'local' } })
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
    // The revocation cleared the key cache: the admin key is read (and known) again before the address fails.
    assert.equal((await get(base, `Bearer ${app.adminKey}`)).status, 200)
    for (let i = 0; i < 3; i++) assert.equal((await get(base, `Bearer ${key}`)).status, 401)
    const fourth = await get(base, `Bearer ${bogusKey()}`)
    assert.equal(fourth.status, 429, 'the three revoked-key requests counted; the keyless ones did not')
    assert.ok(Number(fourth.retryAfter) >= 1)
    assert.equal((await get(base, `Bearer ${app.adminKey}`)).status, 200)
  })

  it('looks no key up once an address has used up its failures, and lets a key the cache knows through', async (t) => {
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 3, keyCache: 'local' } })
    const base = await listening(app)
    const dashboard = await app.key('dashboard')
    const unseen = await app.key('dashboard')
    assert.equal((await get(base, `Bearer ${dashboard}`)).status, 200)
    const lookups = countKeyLookups(app)
    for (let i = 0; i < 3; i++) assert.equal((await get(base, `Bearer ${bogusKey()}`)).status, 401)
    assert.equal(lookups.count, 3, 'each key within the limit is looked up')

    const guesses = await Promise.all(Array.from({ length: 40 }, () => get(base, `Bearer ${bogusKey()}`)))
    assert.ok(guesses.every((answer) => answer.status === 429 && Number(answer.retryAfter) >= 1))
    // A valid key this replica has not seen is not looked up either until the address's minute ends.
    assert.equal((await get(base, `Bearer ${unseen}`)).status, 429)
    assert.equal(lookups.count, 3, 'no database lookup for any key once the address has used up its failures')

    assert.equal((await get(base, `Bearer ${dashboard}`)).status, 200, 'the key the cache knows still works')
  })

  it('is off at 0', async (t) => {
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 0 } })
    const base = await listening(app)
    const answers = await Promise.all(Array.from({ length: 80 }, () => get(base, `Bearer ${bogusKey()}`)))
    assert.ok(answers.every((answer) => answer.status === 401))
  })
})

describe('AuthFailureThrottle', () => {
  it('says how long an address that used up its failures waits, without counting', () => {
    let now = 1_000_000
    const throttle = new AuthFailureThrottle(1, () => now)
    assert.equal(throttle.retryAfter('a'), null)
    throttle.fail('a')
    now += 20_000
    assert.equal(throttle.retryAfter('a'), 40)
    assert.equal(throttle.retryAfter('a'), 40, 'asking counts nothing')
    assert.equal(throttle.fail('a'), 40)
    now += 40_000
    assert.equal(throttle.retryAfter('a'), null, 'its minute is over')
  })

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
