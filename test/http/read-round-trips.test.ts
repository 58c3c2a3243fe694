import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { PoolClient } from 'pg'
import { probeDefinitionExample } from '../../src/http/examples.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { haltedFanout } from '../helpers/fanout-fixtures.ts'
import { createOutcome, evaluate, haltedOutcome, interpret } from '../helpers/fixtures.ts'
import { createReview, judge, postDecide, verdict } from '../helpers/review-fixtures.ts'

/**
 * How many statements each authenticated read sends to the database, counted on the request pool's clients
 * while that one request runs, alone: the sequencer (and its background checkpoints) stopped once the log has
 * caught up (the webhook delivery worker polls on a pool of its own). The key cache is on, as in production, and
 * each read is counted on its second call, with the key cached: the common case.
 */
describe('authenticated reads', () => {
  it('take one database round trip each; a proof against the current size two, and the reads that gather a case or a manifest’s record a few', async (t) => {
    const ta = await buildTestApp(t, { config: { keyCache: 'local' } })
    const admin = ta.adminKey
    const a = await ta.key('orchestrator', ['orch-a'])
    const b = await ta.key('orchestrator', ['orch-b'])
    const { outcome, manifest } = await haltedOutcome(ta, a, b)
    const open = await createOutcome(ta, a)
    await interpret(ta, a, open.outcome_id, { orchestrator_id: 'orch-a', outcome_interpretation: 'success' })
    const fanout = await haltedFanout(ta, admin)
    const review = await createReview(ta, admin, 'do_and_judge')
    await judge(ta, admin, review.review_id, verdict('solo', 'DONE'))
    assert.equal((await postDecide(ta, admin, review.review_id)).statusCode, 200)
    const probe = await ta.request(admin, {
      method: 'POST',
      url: '/v1/probes',
      payload: probeDefinitionExample,
    })
    assert.equal(probe.statusCode, 201)
    const policy = await ta.request(admin, {
      method: 'PUT',
      url: '/v1/subagents/refund-agent/policy',
      payload: { expected_orchestrators: ['orch-a'] },
    })
    assert.equal(policy.statusCode, 200)

    const sentBy = await countStatements(ta)
    const statementsOf = async (url: string, headers: Record<string, string> = {}) => {
      const warm = await ta.request(admin, { method: 'GET', url, headers })
      assert.equal(warm.statusCode, 200, `${url}: ${warm.body}`)
      const { result: res, texts } = await sentBy(() => ta.request(admin, { method: 'GET', url, headers }))
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      return texts
    }

    const expected: [url: string, statements: number][] = [
      [`/v1/outcomes/${outcome.outcome_id}`, 1],
      [`/v1/outcomes?limit=10`, 1],
      [`/v1/subagents/refund-agent/policy`, 1],
      [`/v1/fanouts/${fanout.fanout.fanout_id}`, 1],
      [`/v1/fanouts?limit=10`, 1],
      [`/v1/reviews/${review.review_id}`, 1],
      [`/v1/reviews?limit=10`, 1],
      [`/v1/manifests/${manifest.manifest_id}`, 1],
      [`/v1/manifests?limit=10`, 1],
      [`/v1/manifests?outcome_id=${outcome.outcome_id}`, 1],
      [`/v1/escalations`, 1],
      [`/v1/probes`, 1],
      [`/v1/probes/${probe.json().probe_id}`, 1],
      [`/v1/admin/keys`, 1],
      [`/v1/audit/records?limit=10`, 1],
      [`/v1/audit/records?outcome_id=${outcome.outcome_id}`, 1],
      [`/v1/audit/checkpoint`, 1],
      // The log's state (what it holds, its checkpoints), then the O(log n) nodes its current size names.
      [`/v1/audit/proofs/inclusion?seq=1`, 2],
      // With the size given, the nodes are read with the state.
      [`/v1/audit/proofs/inclusion?seq=1&tree_size=3`, 1],
      [`/v1/audit/proofs/consistency?from_size=1&to_size=3`, 1],
      // The log's state, the manifest, its record, the nodes.
      [`/v1/manifests/${manifest.manifest_id}/inclusion`, 4],
      // The case, its records (read your writes), its manifest.
      [`/v1/audit/outcomes/${outcome.outcome_id}`, 3],
      [`/v1/audit/fanouts/${fanout.fanout.fanout_id}`, 3],
      [`/v1/audit/reviews/${review.review_id}`, 3],
    ]
    const measured: string[] = []
    for (const [url, statements] of expected) {
      const texts = await statementsOf(url)
      if (texts.length !== statements) {
        measured.push(
          `${url}: ${texts.length}, expected ${statements}:\n  ${texts.map(oneLine).join('\n  ')}`,
        )
      }
    }
    const ndjson = await statementsOf('/v1/audit/records', { accept: 'application/x-ndjson' })
    if (ndjson.length !== 1)
      measured.push(`NDJSON export: ${ndjson.length}\n  ${ndjson.map(oneLine).join('\n  ')}`)
    assert.deepEqual(measured, [])
  })
})

describe('the decide path', () => {
  it('sends five statements: a new outcome one, each first interpretation one, the first evaluation two', async (t) => {
    const ta = await buildTestApp(t, { config: { keyCache: 'local' } })
    const a = await ta.key('orchestrator', ['orch-a'])
    const b = await ta.key('orchestrator', ['orch-b'])
    // Each key used once before, so that it is cached: the common case.
    await haltedOutcome(ta, a, b)
    const sentBy = await countStatements(ta)
    const created = await sentBy(() =>
      createOutcome(ta, a, {
        expected_orchestrators: ['orch-a', 'orch-b'],
        arbiter_orchestrator_id: 'orch-a',
      }),
    )
    const id = created.result.outcome_id
    const first = await sentBy(() =>
      interpret(ta, a, id, { orchestrator_id: 'orch-a', outcome_interpretation: 'failure' }),
    )
    const second = await sentBy(() =>
      interpret(ta, b, id, { orchestrator_id: 'orch-b', outcome_interpretation: 'success' }),
    )
    const evaluated = await sentBy(() => evaluate(ta, a, id))
    assert.equal(evaluated.result.manifest.verdict, 'ARBITER_DECIDES')
    assert.deepEqual(
      [created, first, second, evaluated].map(({ texts }) => texts.length),
      [1, 1, 1, 2],
      [created, first, second, evaluated].map(({ texts }) => texts.map(oneLine).join('\n')).join('\n---\n'),
    )
  })
})

/**
 * Stops the sequencer (and its background checkpoints) once the log has caught up, so that only requests use
 * the request pool; returns a function that runs a request and the statements it sent on the pool's clients.
 */
async function countStatements(ta: TestApp) {
  await ta.app.services.auditLog.catchUp()
  await ta.app.services.auditLog.stop()
  let sent: string[] | null = null
  const counted = new WeakSet<PoolClient>()
  ta.app.services.db.on('acquire', (client) => {
    if (counted.has(client)) return
    counted.add(client)
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    ;(client as unknown as { query: unknown }).query = (...args: unknown[]) => {
      const first = args[0] as string | { text: string }
      sent?.push(typeof first === 'string' ? first : first.text)
      return query(...args)
    }
  })
  return async <T>(request: () => Promise<T>): Promise<{ result: T; texts: string[] }> => {
    const texts: string[] = []
    sent = texts
    try {
      return { result: await request(), texts }
    } finally {
      sent = null
    }
  }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').slice(0, 120)
}
