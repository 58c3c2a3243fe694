import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { summarizeManifest } from '../../console/src/shapes.ts'
import { PAGE_BYTES } from '../../src/db/bounded-page.ts'
import { manifestsPage } from '../../src/db/repositories/manifests.ts'
import { queryRows } from '../../src/db/statement.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createOutcome, evaluate } from '../helpers/fixtures.ts'
import { openStream } from '../helpers/sse-client.ts'

/**
 * Lists and streams of large manifests are read a bounded page at a time. Each manifest here is about a megabyte
 * (twelve orchestrators whose criteria differ in hundreds of leaves: every pair's differences are listed), so an
 * envelope is over two (its JWS carries the manifest again).
 */

const ORCHESTRATORS = Array.from({ length: 12 }, (_, i) => `orch-${String(i).padStart(2, '0')}`)
const LEAVES = 450

async function largeManifest(app: TestApp, key: string): Promise<string> {
  const outcome = await createOutcome(app, key, { expected_orchestrators: ORCHESTRATORS })
  for (const [index, orchestrator_id] of ORCHESTRATORS.entries()) {
    const criterion = Object.fromEntries(Array.from({ length: LEAVES }, (_, leaf) => [`c${leaf}`, index]))
    const answer = await app.request(key, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/interpretations`,
      payload: { orchestrator_id, outcome_interpretation: 'success', success_criterion: criterion },
    })
    assert.equal(answer.statusCode, 201, answer.body)
  }
  return (await evaluate(app, key, outcome.outcome_id)).manifest.manifest_id as string
}

async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  return Number(line?.split(' ')[1] ?? Number.NaN)
}

describe('large manifests, listed and streamed', () => {
  it('bounds a list page to about 4 MiB of JSON and continues with next_cursor', async (t) => {
    const app = await buildTestApp(t, { config: { ssePollMs: 50, sseHeartbeatMs: 1000 } })
    const key = await app.key('orchestrator', ORCHESTRATORS)
    const dashboard = await app.key('dashboard')
    const issued: string[] = []
    for (let i = 0; i < 5; i++) issued.push(await largeManifest(app, key))

    const listed: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const url: string = `/v1/manifests?limit=500${cursor === null ? '' : `&cursor=${cursor}`}`
      const page = await app.request(dashboard, { method: 'GET', url })
      assert.equal(page.statusCode, 200)
      const body = page.json<{ items: { manifest: { manifest_id: string } }[]; next_cursor: string | null }>()
      assert.ok(body.items.length > 0, 'a page always moves on')
      const itemBytes = body.items.map((item) => Buffer.byteLength(JSON.stringify(item)))
      assert.ok(itemBytes[0]! > 1024 * 1024, `the manifests are large (${itemBytes[0]} bytes)`)
      // Every page but one of a single item over the bound stays within it.
      if (body.items.length > 1)
        assert.ok(page.rawPayload.length <= PAGE_BYTES + 1024, `${page.rawPayload.length}`)
      assert.ok(page.rawPayload.length <= Math.max(PAGE_BYTES, itemBytes[0]!) + 1024)
      listed.push(...body.items.map((item) => item.manifest.manifest_id))
      cursor = body.next_cursor
      pages += 1
    } while (cursor !== null)
    assert.deepEqual(listed, issued, 'every manifest once, in log order')
    assert.ok(
      pages >= 3,
      `a 500-item page of ${issued.length} large manifests stopped early (${pages} pages)`,
    )

    // The stream's replay reads the same bounded pages: no read holds the whole backlog.
    const rows = await queryRows(app.app.services.db, manifestsPage({ afterSeq: 0 }, 100))
    const held = rows.reduce((sum, row) => sum + row.manifest_jcs.length + row.jws.length, 0)
    assert.ok(rows.length < issued.length && held <= PAGE_BYTES, `a replay page held ${held} bytes`)
  })

  it('replays a backlog to a stream page by page, and shares each page read among the streams at that point', async (t) => {
    const app = await buildTestApp(t, { config: { ssePollMs: 50, sseHeartbeatMs: 1000 } })
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}`
    const key = await app.key('orchestrator', ORCHESTRATORS)
    const dashboard = await app.key('dashboard')
    const backlog: string[] = []
    for (let i = 0; i < 3; i++) backlog.push(await largeManifest(app, key))

    const replay = openStream(base, dashboard, { 'last-event-id': '0' })
    t.after(() => replay.close())
    await replay.until(() => replay.events.length >= 3, 30_000)
    assert.deepEqual(
      replay.events.map((event) => JSON.parse(event.data!).manifest.manifest_id),
      backlog,
    )
    replay.close()

    // Twelve live streams (two keys), then three large manifests: each page is read once for all of them.
    const streams = Array.from({ length: 12 }, (_, i) => openStream(base, i < 6 ? dashboard : app.adminKey))
    t.after(() => {
      for (const stream of streams) stream.close()
    })
    await Promise.all(streams.map((stream) => stream.ready))
    // Counts the feed's reads of manifest pages on the app's own pool (a spy on its public query method).
    const pool = app.app.services.db
    const query = pool.query.bind(pool)
    let pageReads = 0
    pool.query = ((...args: Parameters<typeof pool.query>) => {
      const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text
      if (text && /audit_seq > coalesce\(\$8/.test(text)) pageReads += 1
      return query(...args)
    }) as typeof pool.query
    t.after(() => {
      pool.query = query
    })
    const readBefore = await metric(base, 'arbiter_manifest_stream_pages_read_total')
    const live: string[] = []
    for (let i = 0; i < 3; i++) live.push(await largeManifest(app, key))
    for (const stream of streams) await stream.until(() => stream.events.length >= 3, 30_000)
    for (const stream of streams) {
      assert.deepEqual(
        stream.events.map((event) => JSON.parse(event.data!).manifest.manifest_id),
        live,
      )
    }
    assert.ok(
      pageReads <= 6,
      `${pageReads} page reads for 12 streams and 3 manifests: shared, not one per stream`,
    )
    const counted = (await metric(base, 'arbiter_manifest_stream_pages_read_total')) - readBefore
    assert.equal(counted, pageReads, '/metrics counts the same reads')
  })

  it("keeps a summary of each manifest in the console's feed, not the manifest", async (t) => {
    const app = await buildTestApp(t)
    const key = await app.key('orchestrator', ORCHESTRATORS)
    const id = await largeManifest(app, key)
    const envelope = (await app.request(key, { method: 'GET', url: `/v1/manifests/${id}` })).json()
    const summary = summarizeManifest(envelope.manifest)
    assert.equal(summary.manifest_id, id)
    assert.equal(summary.verdict, envelope.manifest.verdict)
    assert.equal(summary.outcome_id, envelope.manifest.outcome_id)
    assert.ok(JSON.stringify(summary).length < 1024, `${JSON.stringify(summary).length} bytes kept`)
  })
})

describe('large cases, listed', () => {
  it('bounds a page of outcomes with large evidence to about 4 MiB', async (t) => {
    const app = await buildTestApp(t)
    const key = await app.key('orchestrator', ['orch-a'])
    const content = 'x'.repeat(700 * 1024)
    const created: string[] = []
    for (let i = 0; i < 8; i++) {
      const outcome = await createOutcome(app, key, {
        evidence: [{ kind: 'result_payload', name: `big-${i}`, content }],
      })
      created.push(outcome.outcome_id)
    }
    const listed: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const url: string = `/v1/outcomes?limit=500${cursor === null ? '' : `&cursor=${cursor}`}`
      const page = await app.request(key, { method: 'GET', url })
      assert.equal(page.statusCode, 200, page.body)
      const body = page.json<{ items: { outcome_id: string }[]; next_cursor: string | null }>()
      assert.ok(body.items.length > 0)
      assert.ok(page.rawPayload.length <= PAGE_BYTES, `a page of ${page.rawPayload.length} bytes`)
      listed.push(...body.items.map((item) => item.outcome_id))
      cursor = body.next_cursor
      pages += 1
    } while (cursor !== null)
    assert.deepEqual(listed, created)
    assert.ok(pages >= 2, `${pages} pages`)
  })
})
