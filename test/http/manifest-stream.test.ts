import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createOutcome, evaluate, interpret } from '../helpers/fixtures.ts'
import { openStream } from '../helpers/sse-client.ts'

/** Decides an outcome; returns its manifest and, once the sequencer placed it, its envelope's audit_seq. */
async function decideOne(app: TestApp, key: string) {
  const outcome = await createOutcome(app, key)
  await interpret(app, key, outcome.outcome_id, {
    orchestrator_id: 'orch-a',
    outcome_interpretation: 'success',
  })
  const { manifest } = await evaluate(app, key, outcome.outcome_id)
  // The list is in log order and waits for the sequencer: the envelope it lists carries the seq.
  const listed = (
    await app.request(key, { method: 'GET', url: `/v1/manifests?outcome_id=${outcome.outcome_id}` })
  ).json()
  return { ...manifest, audit_seq: listed.items[0].audit_seq as number }
}

describe('GET /v1/manifests/stream', () => {
  it('pushes new manifests, resumes after Last-Event-ID, and sends heartbeats', async (t) => {
    const app = await buildTestApp(t, { config: { ssePollMs: 50, sseHeartbeatMs: 100 } })
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}`
    const dashboard = await app.key('dashboard')
    const a = await app.key('orchestrator', ['orch-a'])

    const early = await decideOne(app, a)
    const live = openStream(base, dashboard)
    t.after(() => live.close())
    await live.ready
    assert.equal(live.status(), 200)
    const first = await decideOne(app, a)
    const second = await decideOne(app, a)
    await live.until(() => live.events.length >= 2)
    assert.deepEqual(
      live.events.map((e) => e.id),
      [String(first.audit_seq), String(second.audit_seq)],
      'without Last-Event-ID only new manifests arrive',
    )
    const envelope = JSON.parse(live.events[0]!.data!)
    assert.equal(envelope.manifest.manifest_id, first.manifest_id)
    assert.equal(envelope.audit_seq, first.audit_seq, "each event's id is its envelope's audit_seq")
    assert.equal(live.events[0]!.event, 'manifest')
    await live.until(() => live.comments.includes('heartbeat'))

    const resumed = openStream(base, dashboard, { 'last-event-id': String(early.audit_seq) })
    t.after(() => resumed.close())
    await resumed.until(() => resumed.events.length >= 2)
    assert.deepEqual(
      resumed.events.map((e) => JSON.parse(e.data!).manifest.manifest_id),
      [first.manifest_id, second.manifest_id],
    )
    const fromZero = openStream(base, dashboard, { 'last-event-id': '0' })
    t.after(() => fromZero.close())
    await fromZero.until(() => fromZero.events.length >= 3)
    assert.equal(JSON.parse(fromZero.events[0]!.data!).manifest.manifest_id, early.manifest_id)

    const anonymous = openStream(base, null)
    await anonymous.ready
    assert.equal(anonymous.status(), 401)
    anonymous.close()
    const bad = openStream(base, dashboard, { 'last-event-id': 'yesterday' })
    await bad.ready
    assert.equal(bad.status(), 400)
    bad.close()
  })

  it('does not let a client that stops reading hold the database', async (t) => {
    const app = await buildTestApp(t, { config: { ssePollMs: 20, sseHeartbeatMs: 1000 } })
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}`
    const a = await app.key('orchestrator', ['orch-a'])
    for (let i = 0; i < 5; i++) await decideOne(app, a)
    const ops = await app.key('ops')
    // A reader that never consumes: its socket buffer fills; the feed must skip it, not wait on it.
    const stalled = httpRequest(`${base}/v1/manifests/stream`, {
      headers: { authorization: `Bearer ${ops}`, 'last-event-id': '0' },
    })
    stalled.on('response', (res) => res.pause())
    stalled.on('error', () => {})
    stalled.end()
    t.after(() => stalled.destroy())
    for (let i = 0; i < 30; i++) await decideOne(app, a)
    const started = performance.now()
    const response = await app.request(ops, { method: 'GET', url: '/v1/manifests?limit=5' })
    assert.equal(response.statusCode, 200)
    assert.ok(performance.now() - started < 2000)
    assert.equal(app.app.db.waitingCount, 0)
  })

  it('streams manifests issued concurrently in log order, each id its audit_seq', async (t) => {
    const app = await buildTestApp(t, { config: { ssePollMs: 50, sseHeartbeatMs: 1000 } })
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}`
    const dashboard = await app.key('dashboard')
    const a = await app.key('orchestrator', ['orch-a'])
    const live = openStream(base, dashboard, { 'last-event-id': '0' })
    t.after(() => live.close())
    await live.ready
    await Promise.all(Array.from({ length: 6 }, () => decideOne(app, a)))
    await live.until(() => live.events.length >= 6)
    const listed = (await app.request(dashboard, { method: 'GET', url: '/v1/manifests' })).json().items
    assert.deepEqual(
      live.events.map((e) => Number(e.id)),
      listed.map((e: { audit_seq: number }) => e.audit_seq),
    )
    const ids = live.events.map((e) => Number(e.id))
    assert.deepEqual(
      ids,
      [...ids].sort((x, y) => x - y),
      'ascending seq',
    )
  })
})
