import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, it } from 'node:test'
import { verifyEnvelope } from '../../src/crypto/jws.ts'
import { listOperations } from '../../src/http/openapi-document.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { listenTestApp } from '../helpers/listening-app.ts'
import { openStream } from '../helpers/sse-client.ts'
import { tallyModule } from './tally/module.ts'

/*
 * A fourth case kind, written only here (test/cases/tally/: its CaseKind, service, schemas, routes, migration and
 * registry entry), served by the real app: its own routes, and the shared ones — audit records and their
 * filters, a case's story, escalations, resolution, the manifest list and stream, the log's verification — know
 * it from its entry alone. If any of them named the kinds it serves, this kind would be missing there.
 */

const MIGRATION = new URL('./tally/migration.sql', import.meta.url)

const WITH_TALLY = { extraCaseKinds: [tallyModule], config: { ssePollMs: 50, sseHeartbeatMs: 1000 } }

async function migrated<A extends TestApp>(app: A): Promise<A> {
  await app.app.services.db.query(await readFile(MIGRATION, 'utf8'))
  return app
}

async function call(app: TestApp, key: string, method: 'GET' | 'POST', url: string, payload?: object) {
  return app.request(key, { method, url, ...(payload === undefined ? {} : { payload }) })
}

/** A tally with these votes, evaluated: its HALT (three differing votes) or its decision. */
async function votedTally(app: TestApp, key: string, choices: string[]) {
  const created = await call(app, key, 'POST', '/v1/tallies')
  assert.equal(created.statusCode, 201, created.body)
  const id = created.json().tally_id as string
  for (const [i, choice] of choices.entries()) {
    const vote = await call(app, key, 'POST', `/v1/tallies/${id}/votes`, { voter: `v${i}`, choice })
    assert.equal(vote.statusCode, 201, vote.body)
  }
  return id
}

describe('a case kind the shared code has never seen (test/cases/tally)', () => {
  it('is decided, escalated, resolved, audited and listed through the shared routes', async (t) => {
    const app = await migrated(await buildTestApp(t, WITH_TALLY))
    const writer = await app.key('orchestrator', ['o1'])
    const ops = await app.key('ops')

    const id = await votedTally(app, writer, ['yes'])
    const pending = await call(app, writer, 'POST', `/v1/tallies/${id}/evaluate`)
    assert.equal(pending.statusCode, 202)
    assert.deepEqual(pending.json(), { status: 'pending', votes_needed: 1 })
    for (const [voter, choice] of [
      ['v1', 'no'],
      ['v2', 'maybe'],
    ])
      assert.equal(
        (await call(app, writer, 'POST', `/v1/tallies/${id}/votes`, { voter, choice })).statusCode,
        201,
      )
    const halted = await call(app, writer, 'POST', `/v1/tallies/${id}/evaluate`)
    assert.equal(halted.statusCode, 200, halted.body)
    const halt = halted.json().manifest
    assert.equal(halt.kind, 'tally')
    assert.equal(halt.verdict, 'DEADLOCK')
    const jwks = (await app.request(null, { method: 'GET', url: '/.well-known/jwks.json' })).json()
    assert.ok(verifyEnvelope(halted.json(), jwks), 'signed like every manifest')

    // Escalations: listed under the kind's name and id field, filtered by its name.
    const escalations = await call(app, ops, 'GET', '/v1/escalations?case=tally&status=open')
    assert.equal(escalations.statusCode, 200, escalations.body)
    const [escalation] = escalations.json().items
    assert.equal(escalations.json().items.length, 1)
    assert.equal(escalation.case, 'tally')
    assert.equal(escalation.tally_id, id)
    assert.equal(escalation.outcome_id, null)
    assert.equal(escalation.verdict, 'DEADLOCK')
    assert.equal(escalation.manifest_id, halt.manifest_id)

    // The shared resolution route: the kind's check (422), then its state (409 once resolved).
    const unknownWinner = await call(app, ops, 'POST', `/v1/tallies/${id}/resolution`, { winner: 'nobody' })
    assert.equal(unknownWinner.statusCode, 422, unknownWinner.body)
    const resolved = await call(app, ops, 'POST', `/v1/tallies/${id}/resolution`, { winner: 'maybe' })
    assert.equal(resolved.statusCode, 201, resolved.body)
    const resolution = resolved.json().manifest
    assert.equal(resolution.verdict, 'HUMAN_RESOLVED')
    assert.equal(resolution.supersedes, halt.manifest_id)
    assert.equal(
      (await call(app, ops, 'POST', `/v1/tallies/${id}/resolution`, { winner: 'yes' })).statusCode,
      409,
    )
    const closed = await call(app, ops, 'GET', '/v1/escalations?case=tally&status=resolved')
    assert.equal(closed.json().items[0].tally_id, id)

    // Audit records: the kind's own kinds, found by its id field; and its story.
    const records = await call(app, ops, 'GET', `/v1/audit/records?tally_id=${id}&limit=100`)
    assert.equal(records.statusCode, 200, records.body)
    assert.deepEqual(
      records.json().items.map((r: { kind: string }) => r.kind),
      [
        'tally.created',
        'vote.recorded',
        'vote.recorded',
        'vote.recorded',
        'manifest.issued',
        'escalation.opened',
        'resolution.recorded',
        'manifest.issued',
      ],
    )
    const votes = await call(app, ops, 'GET', `/v1/audit/records?tally_id=${id}&kind=vote.recorded`)
    assert.equal(votes.json().items.length, 3)
    const story = await call(app, ops, 'GET', `/v1/audit/tallies/${id}`)
    assert.equal(story.statusCode, 200, story.body)
    assert.equal(story.json().tally_id, id)
    assert.equal(story.json().status, 'resolved')
    assert.equal(story.json().records.length, 8)
    assert.equal(story.json().manifest.manifest.manifest_id, resolution.manifest_id)

    // The manifest feed: filtered by its manifest kind, its id field, its verdicts.
    const ofKind = await call(app, ops, 'GET', '/v1/manifests?kind=tally')
    assert.equal(ofKind.statusCode, 200, ofKind.body)
    assert.deepEqual(
      ofKind.json().items.map((e: { manifest: { verdict: string } }) => e.manifest.verdict),
      ['DEADLOCK', 'HUMAN_RESOLVED'],
    )
    const ofCase = await call(app, ops, 'GET', `/v1/manifests?tally_id=${id}&verdict=DEADLOCK`)
    assert.deepEqual(
      ofCase.json().items.map((e: { manifest: { manifest_id: string } }) => e.manifest.manifest_id),
      [halt.manifest_id],
    )
    const one = await call(app, ops, 'GET', `/v1/manifests/${halt.manifest_id}`)
    assert.equal(one.json().manifest.tally_id, id)

    // The log still verifies with the new kind's records in it.
    const verify = await call(app, ops, 'GET', '/v1/audit/verify')
    assert.equal(verify.statusCode, 200, verify.body)
    assert.equal(verify.json().ok, true, verify.body)
  })

  it('streams its manifests on the one feed', async (t) => {
    const app = await migrated(await listenTestApp(t, WITH_TALLY))
    const writer = await app.key('orchestrator', ['o1'])
    const stream = openStream(app.baseUrl, writer)
    t.after(() => stream.close())
    await stream.ready
    assert.equal(stream.status(), 200)
    const id = await votedTally(app, writer, ['yes', 'yes'])
    const decided = await call(app, writer, 'POST', `/v1/tallies/${id}/evaluate`)
    assert.equal(decided.json().manifest.verdict, 'UNANIMOUS')
    await stream.until(() => stream.events.length > 0)
    const event = JSON.parse(stream.events[0]!.data!)
    assert.equal(event.manifest.kind, 'tally')
    assert.equal(event.manifest.tally_id, id)
  })

  it('is documented from its entry: its operationIds, its group among the kinds', async (t) => {
    const app = await buildTestApp(t, WITH_TALLY)
    const document = app.app.swagger() as Record<string, unknown>
    const ids = Object.fromEntries(
      listOperations(document)
        .filter(({ key }) => key.includes('/tallies'))
        .map(({ key, operation }) => [key, operation.operationId]),
    )
    assert.deepEqual(ids, tallyModule.docs.operationIds)
    const tags = (document.tags as { name: string }[]).map((tag) => tag.name)
    assert.ok(tags.indexOf('tallies') > tags.indexOf('reviews'), 'after the registered kinds')
    assert.ok(tags.indexOf('tallies') < tags.indexOf('manifests'), 'before the shared groups')
  })

  it('leaves the shared lists of an app without it as they were', async (t) => {
    const app = await buildTestApp(t)
    const ops = await app.key('ops')
    for (const url of [
      '/v1/escalations?case=tally',
      '/v1/manifests?kind=tally',
      '/v1/audit/records?kind=vote.recorded',
      `/v1/audit/records?tally_id=${crypto.randomUUID()}`,
    ]) {
      assert.equal((await call(app, ops, 'GET', url)).statusCode, 400, url)
    }
  })
})
