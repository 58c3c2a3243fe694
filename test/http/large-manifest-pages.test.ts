import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import { ManifestFeed } from '../../console/src/manifest-feed.ts'
import { summarizeManifest } from '../../console/src/shapes.ts'
import { PAGE_BYTES } from '../../src/db/bounded-page.ts'
import { manifestsPage } from '../../src/db/repositories/manifests.ts'
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

async function largeManifest(app: TestApp, key: string, leaves = LEAVES): Promise<string> {
  const outcome = await createOutcome(app, key, { expected_orchestrators: ORCHESTRATORS })
  for (const [index, orchestrator_id] of ORCHESTRATORS.entries()) {
    const criterion = Object.fromEntries(Array.from({ length: leaves }, (_, leaf) => [`c${leaf}`, index]))
    const answer = await app.request(key, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/interpretations`,
      payload: { orchestrator_id, outcome_interpretation: 'success', success_criterion: criterion },
    })
    assert.equal(answer.statusCode, 201, answer.body)
  }
  return (await evaluate(app, key, outcome.outcome_id)).manifest.manifest_id as string
}

/** An app listening on a port, with an orchestrator key of every orchestrator here and a dashboard key. */
async function streamingApp(t: TestContext) {
  // No shedding on event-loop lag: signing and parsing megabyte manifests here blocks the loop, and a loop blocked
  // through a whole sample interval reads as an infinite delay (under-pressure has no sample to average).
  const overload = { maxEventLoopDelayMs: 0 }
  const app = await buildTestApp(t, { config: { ssePollMs: 50, sseHeartbeatMs: 1000, overload } })
  await app.app.listen({ port: 0, host: '127.0.0.1' })
  return {
    app,
    base: `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}`,
    key: await app.key('orchestrator', ORCHESTRATORS),
    dashboard: await app.key('dashboard'),
  }
}

async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  return Number(line?.split(' ')[1] ?? Number.NaN)
}

interface PageRead {
  rows: number
  /** The stored bytes of the manifests it returned (each manifest's JCS and its JWS). */
  bytes: number
}

/**
 * Records every read of a page of manifests on the app's own pool from now on (a spy on its public query method
 * that passes every call through to the database): how many manifests each returned and how many bytes.
 */
function watchPageReads(app: TestApp): PageRead[] {
  const pageText = manifestsPage({ afterSeq: 0 }, 1).text
  const pool = app.app.services.db
  const query = pool.query.bind(pool)
  const reads: PageRead[] = []
  pool.query = ((...args: Parameters<typeof pool.query>) => {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text
    const result = query(...args) as unknown
    if (text === pageText && result instanceof Promise) {
      return result.then((answer: { rows: { manifest_jcs: string; jws: string }[] }) => {
        const bytes = answer.rows.reduce(
          (sum, row) => sum + Buffer.byteLength(row.manifest_jcs) + Buffer.byteLength(row.jws),
          0,
        )
        reads.push({ rows: answer.rows.length, bytes })
        return answer
      })
    }
    return result
  }) as typeof pool.query
  return reads
}

/**
 * The console's manifest feed, run here against `base`: its list reads through a minimal stand-in for the
 * console's Api, and its stream's relative path is resolved against `base` (as the browser does against the page).
 */
async function consoleFeed(t: TestContext, base: string, key: string): Promise<ManifestFeed> {
  const browserFetch = globalThis.fetch
  globalThis.fetch = (input, init) =>
    browserFetch(typeof input === 'string' ? new URL(input, base) : input, init)
  const authorization = { authorization: `Bearer ${key}` }
  const api = {
    authorization,
    async get<T>(path: string): Promise<T> {
      const answer = await browserFetch(new URL(path, base), { headers: authorization })
      assert.equal(answer.status, 200)
      return (await answer.json()) as T
    },
  }
  const feed = new ManifestFeed(api)
  t.after(() => {
    feed.stop()
    globalThis.fetch = browserFetch
  })
  await feed.start()
  return feed
}

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    assert.ok(Date.now() < deadline, 'timed out')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
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
  })

  it('replays a backlog over the byte bound to a stream page by page, every manifest in order', async (t) => {
    const { app, base, key, dashboard } = await streamingApp(t)
    // Manifests of about a megabyte as envelopes: a few fit a page, the backlog does not.
    const backlog: string[] = []
    for (let i = 0; i < 8; i++) backlog.push(await largeManifest(app, key, 200))

    const reads = watchPageReads(app)
    const readBefore = await metric(base, 'arbiter_manifest_stream_pages_read_total')
    const replay = openStream(base, dashboard, { 'last-event-id': '0' })
    t.after(() => replay.close())
    await replay.until(() => replay.events.length >= backlog.length, 60_000)
    assert.deepEqual(
      replay.events.map((event) => JSON.parse(event.data!).manifest.manifest_id),
      backlog,
      'every manifest once, in log order',
    )
    const seqs = replay.events.map((event) => Number(event.id))
    assert.ok(
      seqs.every((seq, i) => i === 0 || seq > seqs[i - 1]!),
      `ids in log order: ${seqs}`,
    )
    const streamed = replay.events.reduce((sum, event) => sum + Buffer.byteLength(event.data!), 0)
    assert.ok(streamed > 1.5 * PAGE_BYTES, `the backlog (${streamed} bytes) is well over one page`)

    // The feed read the backlog in bounded pages: never the whole backlog at once. (A client slower than the
    // feed has the rest of a page skipped and read again: pages may overlap, each stays bounded.)
    assert.ok(reads.length >= 2, `${reads.length} page reads for a backlog of ${streamed} bytes`)
    for (const read of reads) {
      assert.ok(read.bytes <= PAGE_BYTES, `a page read held ${read.bytes} bytes`)
      assert.ok(read.rows < backlog.length, `a page read held ${read.rows} of ${backlog.length} manifests`)
    }
    const counted = (await metric(base, 'arbiter_manifest_stream_pages_read_total')) - readBefore
    assert.equal(counted, reads.length, '/metrics counts the same reads')
  })

  it('shares each page read among the streams at that point', async (t) => {
    const { app, base, key, dashboard } = await streamingApp(t)

    // Twelve live streams (two keys), then three large manifests: each page is read once for all of them.
    const streams = Array.from({ length: 12 }, (_, i) => openStream(base, i < 6 ? dashboard : app.adminKey))
    t.after(() => {
      for (const stream of streams) stream.close()
    })
    await Promise.all(streams.map((stream) => stream.ready))
    const reads = watchPageReads(app)
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
      reads.length <= 6,
      `${reads.length} page reads for 12 streams and 3 manifests: shared, not one per stream`,
    )
    const counted = (await metric(base, 'arbiter_manifest_stream_pages_read_total')) - readBefore
    assert.equal(counted, reads.length, '/metrics counts the same reads')
  })

  it("keeps a summary of each manifest in the console's feed, not the manifest", async (t) => {
    const { app, base, key, dashboard } = await streamingApp(t)
    // One large manifest reaches the console through its list, two through its stream.
    const issued = [await largeManifest(app, key)]
    const feed = await consoleFeed(t, base, dashboard)
    await until(() => feed.entries.length >= 1 && feed.state.phase === 'open', 30_000)
    for (let i = 0; i < 2; i++) issued.push(await largeManifest(app, key))
    await until(() => feed.entries.length >= issued.length, 30_000)

    assert.equal(feed.loadError, null)
    assert.deepEqual(
      feed.entries.map((entry) => entry.manifest.manifest_id),
      [...issued].reverse(),
      'newest first',
    )
    assert.deepEqual(
      feed.entries.map((entry) => entry.arrivedAt === null),
      [false, false, true],
      'the first from the list, the others from the stream',
    )
    for (const [i, entry] of feed.entries.entries()) {
      const envelope = (
        await app.request(key, { method: 'GET', url: `/v1/manifests/${issued[2 - i]}` })
      ).json()
      assert.ok(JSON.stringify(envelope).length > 1024 * 1024, 'the manifests are large')
      assert.deepEqual(entry.manifest, summarizeManifest(envelope.manifest))
    }
    // Nothing else the feed holds keeps an envelope either.
    const held = JSON.stringify(feed).length
    assert.ok(held < 4096, `the feed holds ${held} bytes of JSON for three large manifests`)
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
