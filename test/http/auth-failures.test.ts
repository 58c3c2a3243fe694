import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { AuthFailureThrottle, addressKey } from '../../src/http/auth-failure-throttle.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

/** Failed authentication is throttled per client address: guessing keys costs the guesser. */

const bogusKey = () => `arb_${randomBytes(32).toString('base64url')}`

async function listening(app: TestApp): Promise<string> {
  await app.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}`
}

async function get(base: string, authorization: string | null, forwardedFor?: string) {
  const response = await fetch(`${base}/v1/manifests?limit=1`, {
    headers: {
      ...(authorization === null ? {} : { authorization }),
      ...(forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }),
    },
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

  it('once an address has used up its failures, reads the active keys at most once a second instead of each key', async (t) => {
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 3, keyCache: 'local' } })
    const base = await listening(app)
    const dashboard = await app.key('dashboard')
    const unseen = await app.key('dashboard')
    assert.equal((await get(base, `Bearer ${dashboard}`)).status, 200)
    const lookups = countKeyLookups(app)
    for (let i = 0; i < 3; i++) assert.equal((await get(base, `Bearer ${bogusKey()}`)).status, 401)
    assert.equal(lookups.count, 3, 'each key within the limit is looked up')

    const started = performance.now()
    const guesses = await Promise.all(Array.from({ length: 100 }, () => get(base, `Bearer ${bogusKey()}`)))
    const seconds = (performance.now() - started) / 1000
    assert.ok(guesses.every((answer) => answer.status === 429 && Number(answer.retryAfter) >= 1))
    // Loads of the active keys start at least a second apart; no guess is looked up on its own.
    const reloads = lookups.count - 3
    assert.ok(reloads >= 1, 'the guesses were checked against the active keys')
    assert.ok(
      reloads <= 1 + Math.floor(seconds),
      `${reloads} reads of api_keys for 100 guesses in ${seconds.toFixed(1)} s: at most one a second`,
    )

    assert.equal((await get(base, `Bearer ${dashboard}`)).status, 200, 'the key the cache knows still works')
    const beforeUnseen = lookups.count
    assert.equal(
      (await get(base, `Bearer ${unseen}`)).status,
      200,
      'a valid key the cache has not seen works',
    )
    assert.ok(lookups.count - beforeUnseen <= 2, 'at most a reload and its own lookup')
  })

  it('lets a valid key through from a throttled address when the key cache is off, also one created since', async (t) => {
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 2, keyCache: 'off' } })
    const base = await listening(app)
    for (let i = 0; i < 2; i++) assert.equal((await get(base, `Bearer ${bogusKey()}`)).status, 401)
    // The address is throttled and its guesses have loaded the active keys just now.
    assert.equal((await get(base, `Bearer ${bogusKey()}`)).status, 429)
    const created = await app.key('dashboard')
    assert.equal(
      (await get(base, `Bearer ${created}`)).status,
      200,
      'created after the last load: waits for the next',
    )
    assert.equal((await get(base, `Bearer ${app.adminKey}`)).status, 200)
    assert.equal((await get(base, `Bearer ${bogusKey()}`)).status, 429)
  })

  it('refuses a key revoked since the active keys were read, from a throttled address', async (t) => {
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 2, keyCache: 'off' } })
    const base = await listening(app)
    const created = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/admin/keys',
      payload: { role: 'dashboard', label: 'soon revoked' },
    })
    const { id, key } = created.json<{ id: string; key: string }>()
    for (let i = 0; i < 2; i++) assert.equal((await get(base, `Bearer ${bogusKey()}`)).status, 401)
    assert.equal((await get(base, `Bearer ${key}`)).status, 200, 'active: in the set, then looked up')
    const revoked = await app.request(app.adminKey, { method: 'DELETE', url: `/v1/admin/keys/${id}` })
    assert.equal(revoked.statusCode, 204)
    assert.equal((await get(base, `Bearer ${key}`)).status, 429, 'still in the set: looked up, found revoked')
    // Found revoked, it left the set: using it again costs no lookup of its own, like any guess.
    const lookups = countKeyLookups(app)
    const started = performance.now()
    const again = await Promise.all(Array.from({ length: 20 }, () => get(base, `Bearer ${key}`)))
    const seconds = (performance.now() - started) / 1000
    assert.ok(again.every((answer) => answer.status === 429))
    assert.ok(
      lookups.count <= 1 + Math.floor(seconds),
      `${lookups.count} reads of api_keys in ${seconds.toFixed(1)} s`,
    )
  })

  it('lets a key created through another instance on the same database through from a throttled address', async (t) => {
    const first = await buildTestApp(t, { config: { authFailuresPerMinute: 2 } })
    const other = await buildTestApp(t, { database: first.db })
    const base = await listening(first)
    for (let i = 0; i < 2; i++) assert.equal((await get(base, `Bearer ${bogusKey()}`)).status, 401)
    assert.equal((await get(base, `Bearer ${bogusKey()}`)).status, 429)
    const created = await other.request(other.adminKey, {
      method: 'POST',
      url: '/v1/admin/keys',
      payload: { role: 'dashboard', label: 'made elsewhere' },
    })
    assert.equal(created.statusCode, 201)
    const { key } = created.json<{ key: string }>()
    assert.equal((await get(base, `Bearer ${key}`)).status, 200)
    assert.equal((await get(base, `Bearer ${bogusKey()}`)).status, 429)
  })

  it('counts the address X-Forwarded-For names when the peer is a trusted proxy, and only then', async (t) => {
    // The test's requests come from 127.0.0.1: the proxy here.
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 2, trustProxy: ['127.0.0.1'] } })
    const base = await listening(app)
    for (let i = 0; i < 2; i++)
      assert.equal((await get(base, `Bearer ${bogusKey()}`, '198.51.100.1')).status, 401)
    assert.equal((await get(base, `Bearer ${bogusKey()}`, '198.51.100.1')).status, 429)
    // Another client behind the same proxy has failures of its own to spend.
    assert.equal((await get(base, `Bearer ${bogusKey()}`, '198.51.100.2')).status, 401)
    // A client cannot pass for another by sending X-Forwarded-For itself: the proxy appends the address it saw,
    // and the nearest address the proxy did not vouch for is the client's.
    assert.equal((await get(base, `Bearer ${bogusKey()}`, '203.0.113.9, 198.51.100.1')).status, 429)

    // Without a trusted proxy the header is the client's word: every request counts for the peer's address.
    const direct = await buildTestApp(t, { config: { authFailuresPerMinute: 2 } })
    const directBase = await listening(direct)
    const answers = []
    for (let i = 0; i < 3; i++)
      answers.push((await get(directBase, `Bearer ${bogusKey()}`, `198.51.100.${i}`)).status)
    assert.deepEqual(answers, [401, 401, 429])
  })

  it('is off at 0', async (t) => {
    const app = await buildTestApp(t, { config: { authFailuresPerMinute: 0 } })
    const base = await listening(app)
    const answers = await Promise.all(Array.from({ length: 80 }, () => get(base, `Bearer ${bogusKey()}`)))
    assert.ok(answers.every((answer) => answer.status === 401))
  })
})

describe('AuthFailureThrottle', () => {
  it('counts an IPv4 address as it is, also IPv4-mapped, and an IPv6 address by its /64', () => {
    assert.equal(addressKey('203.0.113.7'), '203.0.113.7')
    assert.equal(addressKey('::ffff:203.0.113.7'), '203.0.113.7')
    assert.equal(addressKey('::ffff:cb00:7107'), '203.0.113.7')
    assert.equal(addressKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd'), '2001:db8:1:2::/64')
    assert.equal(addressKey('2001:0db8:0001:0002::1'), '2001:db8:1:2::/64')
    assert.equal(addressKey('2001:db8:1:3::1'), '2001:db8:1:3::/64')
    assert.equal(addressKey('::1'), '::/64')
    assert.equal(addressKey('not an address'), 'not an address')
  })

  it('throttles every address of an IPv6 /64 together, and its neighbour /64 apart', () => {
    const throttle = new AuthFailureThrottle(2, () => 0)
    assert.equal(throttle.fail('2001:db8:1:2::1'), null)
    assert.equal(throttle.fail('2001:db8:1:2::2'), null)
    assert.equal(throttle.retryAfter('2001:db8:1:2:ffff:ffff:ffff:ffff'), 60)
    assert.equal(throttle.fail('2001:db8:1:2::3'), 60)
    assert.equal(throttle.retryAfter('2001:db8:1:3::1'), null)
    assert.equal(throttle.fail('::ffff:198.51.100.1'), null)
    assert.equal(throttle.fail('198.51.100.1'), null)
    assert.equal(throttle.retryAfter('198.51.100.1'), 60)
    assert.equal(throttle.retryAfter('198.51.100.2'), null)
    assert.equal(throttle.size, 2)
  })

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
