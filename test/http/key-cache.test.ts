import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import pg from 'pg'
import { hashApiKey } from '../../src/services/keys.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createTestDatabase } from '../helpers/database.ts'

/**
 * The API-key cache across two app instances (replicas) on one database: a key read once is answered from memory,
 * and a revocation on one instance is refused on the very next request on the other.
 */

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const listKeys = (app: TestApp, key: string) => app.request(key, { method: 'GET', url: '/v1/admin/keys' })

async function newAdminKey(app: TestApp): Promise<{ id: string; key: string }> {
  const created = await app.request(app.adminKey, {
    method: 'POST',
    url: '/v1/admin/keys',
    payload: { role: 'admin', label: 'replica test' },
  })
  assert.equal(created.statusCode, 201, created.body)
  return created.json<{ id: string; key: string }>()
}

async function twoReplicas(
  t: Parameters<typeof buildTestApp>[0],
  mode: 'listen' | 'local',
): Promise<[TestApp, TestApp]> {
  const database = await createTestDatabase()
  const a = await buildTestApp(t, { database, config: { keyCache: mode } })
  const b = await buildTestApp(t, { database, config: { keyCache: mode } })
  // After the apps' own teardown (hooks run in the order they were added).
  t.after(() => database.stop())
  await until(
    'both key caches to serve',
    () => a.app.services.keyCache!.serving && b.app.services.keyCache!.serving,
  )
  return [a, b]
}

async function revokedOnAThenRefusedOnB(a: TestApp, b: TestApp) {
  const { id, key } = await newAdminKey(a)
  assert.equal((await listKeys(b, key)).statusCode, 200)
  // B answers this key from memory now.
  assert.ok(b.app.services.keyCache!.lookup(hashApiKey(key)), 'B caches the key it has read')
  assert.equal((await listKeys(b, key)).statusCode, 200)
  const revoked = await a.request(a.adminKey, { method: 'DELETE', url: `/v1/admin/keys/${id}` })
  assert.equal(revoked.statusCode, 204, revoked.body)
  const next = await listKeys(b, key)
  assert.equal(next.statusCode, 401, 'the very next request on the other replica is refused')
  assert.equal((await listKeys(a, key)).statusCode, 401)
}

describe('API-key cache across replicas', () => {
  const postgres = process.env.TEST_DATABASE_URL !== undefined

  it('a key revoked on replica A is refused on the next request on replica B', async (t) => {
    const [a, b] = await twoReplicas(t, postgres ? 'listen' : 'local')
    await revokedOnAThenRefusedOnB(a, b)
    // And the other way round.
    await revokedOnAThenRefusedOnB(b, a)
  })

  it('forgets a revocation that failed: nothing is left waiting for acks', async (t) => {
    const [a] = await twoReplicas(t, postgres ? 'listen' : 'local')
    for (let i = 0; i < 3; i++) {
      const missing = await a.request(a.adminKey, { method: 'DELETE', url: `/v1/admin/keys/${randomUUID()}` })
      assert.equal(missing.statusCode, 404, missing.body)
    }
    assert.equal(a.app.services.keyCache!.pendingRevocations, 0)
  })

  it('does not serve from memory while its LISTEN connection is down, and serves again once back', {
    skip: postgres ? false : 'LISTEN/NOTIFY across connections needs PostgreSQL',
  }, async (t) => {
    const [a, b] = await twoReplicas(t, 'listen')
    const { id, key } = await newAdminKey(a)
    assert.equal((await listKeys(b, key)).statusCode, 200)
    assert.ok(b.app.services.keyCache!.lookup(hashApiKey(key)))
    const heard: (string | null)[] = []
    b.app.services.keyCache!.onRevoked((keyId) => heard.push(keyId))
    // Cut every key listener of this database: no replica hears a revocation now.
    const admin = new pg.Client({ connectionString: a.db.connectionString })
    await admin.connect()
    await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE datname = current_database() AND application_name = 'arbiter-key-cache'`,
    )
    await until('B to notice its listener is down', () => !b.app.services.keyCache!.serving)
    // A revocation nobody is told about (written straight to the table): B must read the key, not remember it.
    await admin.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [id])
    assert.equal((await listKeys(b, key)).statusCode, 401)
    await until('B to listen again', () => b.app.services.keyCache!.serving)
    // What holds the open streams is told that some key may have been revoked unheard, so it reads their keys.
    assert.deepEqual(heard, [null])
    assert.equal((await listKeys(b, key)).statusCode, 401)
    assert.equal((await listKeys(b, b.adminKey)).statusCode, 200)
    await admin.end()
  })

  it('caches nothing when off (the default)', async (t) => {
    const app = await buildTestApp(t)
    assert.equal((await listKeys(app, app.adminKey)).statusCode, 200)
    assert.equal(app.app.services.keyCache!.serving, false)
    assert.equal(app.app.services.keyCache!.lookup(hashApiKey(app.adminKey)), undefined)
  })
})
