import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'
import { haltedOutcome } from '../helpers/fixtures.ts'

/**
 * Every read in log order waits for the changes committed before it: with the sequencer stopped, none answers,
 * and once it runs again each answer holds the change (see read-round-trips.test.ts for the common case, where
 * the check and the read are one statement).
 */
describe('reads in log order, while the sequencer is behind', () => {
  it('wait for every change committed before them, then answer with it', async (t) => {
    const app = await buildTestApp(t)
    const a = await app.key('orchestrator', ['orch-a'])
    const b = await app.key('orchestrator', ['orch-b'])
    const ops = await app.key('ops')
    await app.app.services.auditLog.catchUp()
    const sequencer = app.app.services.auditLog.sequencer
    await sequencer.stop({ handOver: false })
    const { outcome, manifest } = await haltedOutcome(app, a, b)
    const id = outcome.outcome_id

    const read = (url: string, headers: Record<string, string> = {}) =>
      app.request(ops, { method: 'GET', url, headers }).then((res) => {
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
        return res
      })
    const reads = {
      manifests: read(`/v1/manifests?outcome_id=${id}`),
      story: read(`/v1/audit/outcomes/${id}`),
      records: read(`/v1/audit/records?outcome_id=${id}`),
      export: read(`/v1/audit/records?outcome_id=${id}`, { accept: 'application/x-ndjson' }),
      checkpoint: read('/v1/audit/checkpoint'),
      inclusion: read(`/v1/manifests/${manifest.manifest_id}/inclusion`),
    }
    let answered = 0
    for (const pending of Object.values(reads))
      void pending.then(
        () => answered++,
        () => answered++,
      )
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(answered, 0, 'no answer while the changes are not in the log')
    sequencer.start()

    const listed = (await reads.manifests).json().items
    assert.deepEqual(
      listed.map((e: { manifest: { manifest_id: string } }) => e.manifest.manifest_id),
      [manifest.manifest_id],
    )
    const seq: number = listed[0].audit_seq
    assert.ok(seq > 0)
    const kinds = (records: { kind: string }[]) => records.map((r) => r.kind)
    const story = (await reads.story).json()
    assert.ok(kinds(story.records).includes('manifest.issued'))
    assert.ok(kinds((await reads.records).json().items).includes('manifest.issued'))
    const exported = (await reads.export).body
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    assert.deepEqual(kinds(exported), kinds(story.records))
    assert.ok((await reads.checkpoint).json().checkpoint.tree_size >= seq)
    const inclusion = (await reads.inclusion).json()
    assert.equal(inclusion.record.seq, seq)
    assert.ok(inclusion.tree_size >= seq)
  })
})
