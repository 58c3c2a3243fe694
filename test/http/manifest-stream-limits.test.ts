import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createTestDatabase } from '../helpers/database.ts'
import { createOutcome, evaluate, interpret } from '../helpers/fixtures.ts'
import { openStream } from '../helpers/sse-client.ts'

/** The bounds on open manifest streams: per key, per replica, and a revoked key's streams closing. */

async function listening(app: TestApp): Promise<string> {
  await app.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}`
}

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

async function newKey(app: TestApp, role: 'dashboard' | 'ops'): Promise<{ id: string; key: string }> {
  const created = await app.request(app.adminKey, {
    method: 'POST',
    url: '/v1/admin/keys',
    payload: { role, label: 'stream test' },
  })
  assert.equal(created.statusCode, 201, created.body)
  return created.json<{ id: string; key: string }>()
}

async function decideOne(app: TestApp, key: string): Promise<string> {
  const outcome = await createOutcome(app, key)
  await interpret(app, key, outcome.outcome_id, {
    orchestrator_id: 'orch-a',
    outcome_interpretation: 'success',
  })
  return (await evaluate(app, key, outcome.outcome_id)).manifest.manifest_id as string
}

describe('GET /v1/manifests/stream: bounds', { timeout: 120_000 }, () => {
  it('holds 16 open streams per key: the 17th gets 429 with Retry-After, even when 24 open at once', async (t) => {
    const app = await buildTestApp(t, { config: { ssePollMs: 50, sseHeartbeatMs: 1000 } })
    const base = await listening(app)
    const { key } = await newKey(app, 'dashboard')
    const streams = Array.from({ length: 24 }, () => openStream(base, key))
    t.after(() => {
      for (const stream of streams) stream.close()
    })
    await Promise.all(streams.map((stream) => stream.ready))
    const statuses = streams.map((stream) => stream.status())
    assert.equal(statuses.filter((status) => status === 200).length, 16, `statuses: ${statuses}`)
    const refused = streams.filter((stream) => stream.status() === 429)
    assert.equal(refused.length, 8)
    for (const stream of refused) assert.ok(Number(stream.retryAfter()) > 0, 'Retry-After on every 429')

    // Another key is not held by this one's streams.
    const other = openStream(base, (await newKey(app, 'dashboard')).key)
    t.after(() => other.close())
    await other.ready
    assert.equal(other.status(), 200)

    // A stream that closes gives its slot back.
    const open = streams.filter((stream) => stream.status() === 200)
    open[0]!.close()
    let again = openStream(base, key)
    await again.ready
    for (let tries = 0; again.status() === 429 && tries < 50; tries++) {
      again.close()
      await new Promise((resolve) => setTimeout(resolve, 20))
      again = openStream(base, key)
      await again.ready
    }
    t.after(() => again.close())
    assert.equal(again.status(), 200)
  })

  it('holds the streams of one replica: past its bound it answers 503 with Retry-After', async (t) => {
    const app = await buildTestApp(t, { config: { ssePollMs: 50, sseHeartbeatMs: 1000, sseMaxStreams: 3 } })
    const base = await listening(app)
    const keys = await Promise.all([1, 2, 3, 4].map(() => newKey(app, 'dashboard')))
    const streams = keys.slice(0, 3).map(({ key }) => openStream(base, key))
    t.after(() => {
      for (const stream of streams) stream.close()
    })
    await Promise.all(streams.map((stream) => stream.ready))
    assert.deepEqual(
      streams.map((stream) => stream.status()),
      [200, 200, 200],
    )
    const fourth = openStream(base, keys[3]!.key)
    t.after(() => fourth.close())
    await fourth.ready
    assert.equal(fourth.status(), 503)
    assert.ok(Number(fourth.retryAfter()) > 0)
  })

  it('serves 1,000 streams per replica by default: the 1,001st gets 503', { timeout: 300_000 }, async (t) => {
    // The default configuration (buildTestApp leaves the per-replica bound alone); 63 keys hold 16 streams each.
    const app = await buildTestApp(t, { config: { ssePollMs: 1000, sseHeartbeatMs: 60_000 } })
    const base = await listening(app)
    const keys = await Promise.all(Array.from({ length: 63 }, () => app.key('dashboard')))
    const streams: ReturnType<typeof openStream>[] = []
    t.after(() => {
      for (const stream of streams) stream.close()
    })
    for (let opened = 0; opened < 1000; opened += 100) {
      const batch = Array.from({ length: 100 }, (_, i) =>
        openStream(base, keys[Math.floor((opened + i) / 16)]!),
      )
      streams.push(...batch)
      await Promise.all(batch.map((stream) => stream.ready))
    }
    const statuses = new Set(streams.map((stream) => stream.status()))
    assert.deepEqual([...statuses], [200], 'a thousand streams open')
    const over = openStream(base, keys[62]!)
    t.after(() => over.close())
    await over.ready
    assert.equal(over.status(), 503, 'the 1,001st stream of the replica, from a key with streams to spare')
    assert.ok(Number(over.retryAfter()) > 0)
  })

  it('counts the 16 streams of a key per replica', async (t) => {
    const database = await createTestDatabase()
    t.after(() => database.stop())
    const config = { ssePollMs: 50, sseHeartbeatMs: 1000 }
    const replicas = [
      await buildTestApp(t, { database, config }),
      await buildTestApp(t, { database, config }),
    ]
    const bases = [await listening(replicas[0]!), await listening(replicas[1]!)]
    const { key } = await newKey(replicas[0]!, 'dashboard')
    const streams = bases.flatMap((base) => Array.from({ length: 16 }, () => openStream(base, key)))
    t.after(() => {
      for (const stream of streams) stream.close()
    })
    await Promise.all(streams.map((stream) => stream.ready))
    assert.deepEqual(
      streams.map((stream) => stream.status()),
      Array(32).fill(200),
      'sixteen on each replica',
    )
    for (const base of bases) {
      const seventeenth = openStream(base, key)
      t.after(() => seventeenth.close())
      await seventeenth.ready
      assert.equal(seventeenth.status(), 429)
    }
  })

  it("closes a revoked key's streams within 1 s on every replica; other keys' streams stay open", async (t) => {
    const postgres = process.env.TEST_DATABASE_URL !== undefined
    const database = await createTestDatabase()
    const config = { ssePollMs: 50, sseHeartbeatMs: 100, keyCache: postgres ? 'listen' : 'local' } as const
    const a = await buildTestApp(t, { database, config })
    const b = await buildTestApp(t, { database, config })
    t.after(() => database.stop())
    await until(
      'both key caches to serve',
      () => a.app.services.keyCache!.serving && b.app.services.keyCache!.serving,
    )
    const [baseA, baseB] = [await listening(a), await listening(b)]
    const revoked = await newKey(a, 'dashboard')
    const kept = await newKey(a, 'ops')
    const orchestrator = await a.key('orchestrator', ['orch-a'])

    const doomed = [
      openStream(baseA, revoked.key),
      openStream(baseB, revoked.key),
      openStream(baseB, revoked.key),
    ]
    const staying = [openStream(baseA, kept.key), openStream(baseB, kept.key)]
    const all = [...doomed, ...staying]
    t.after(() => {
      for (const stream of all) stream.close()
    })
    await Promise.all(all.map((stream) => stream.ready))
    assert.deepEqual(
      all.map((stream) => stream.status()),
      [200, 200, 200, 200, 200],
    )
    // Every stream is live: each sees a manifest issued now.
    const before = await decideOne(a, orchestrator)
    for (const stream of all) await stream.until(() => stream.events.length >= 1)
    assert.ok(all.every((stream) => JSON.parse(stream.events[0]!.data!).manifest.manifest_id === before))

    const started = performance.now()
    const deleted = await a.request(a.adminKey, { method: 'DELETE', url: `/v1/admin/keys/${revoked.id}` })
    assert.equal(deleted.statusCode, 204, deleted.body)
    await until('the revoked key’s streams to end', () => doomed.every((stream) => stream.ended()), 5000)
    const elapsed = performance.now() - started
    assert.ok(elapsed < 1000, `closed ${Math.round(elapsed)} ms after the revocation was sent`)

    // The other key's streams stay open and keep receiving.
    const after = await decideOne(b, orchestrator)
    for (const stream of staying) await stream.until(() => stream.events.length >= 2)
    assert.ok(staying.every((stream) => !stream.ended()))
    assert.ok(staying.every((stream) => JSON.parse(stream.events[1]!.data!).manifest.manifest_id === after))
    assert.ok(
      doomed.every((stream) => stream.events.length === 1),
      'no manifest reached a revoked stream',
    )
    // Heartbeats do not keep a revoked key's streams alive, and a new one is refused.
    const retry = openStream(baseB, revoked.key)
    t.after(() => retry.close())
    await retry.ready
    assert.equal(retry.status(), 401)
  })
})
