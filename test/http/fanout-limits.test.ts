import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { LIMITS } from '../../src/domain/limits.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { databaseSnapshotter } from '../helpers/db-snapshot.ts'
import { createFanout, reconcileFanout, submitResult } from '../helpers/fanout-fixtures.ts'
import { uniqueRun } from '../helpers/fixtures.ts'

/**
 * The limits on fan-out results (docs/limits.md): each is refused where the result arrives, as 422
 * `limit-exceeded` naming the limit and its value, with nothing stored; at the limits, reconciliation stays bounded.
 */

const cleanups: Array<() => unknown> = []
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})
const suite = { after: (fn: () => unknown) => void cleanups.push(fn) } as Parameters<typeof buildTestApp>[0]

let app: TestApp
let scout: string
let rival: string
before(async () => {
  app = await buildTestApp(suite)
  scout = await app.key('orchestrator', ['scout'])
  rival = await app.key('orchestrator', ['rival'])
})

function fanoutBody(subtasks: string[], facts = ['f']) {
  return {
    orchestrator_id: 'scout',
    fanout_key: uniqueRun('limits'),
    question: 'What is the value?',
    facts,
    subtasks: subtasks.map((subtask_id) => ({ subtask_id, facts })),
  }
}

/** A DONE result with `count` claims of `fact`, values `from`, `from + 1`, …: as many distinct positions. */
function distinctClaims(subtask_id: string, count: number, from = 0, fact = 'f') {
  return {
    subtask_id,
    status: 'DONE',
    summary: 'done',
    evidence: ['notes'],
    claims: Array.from({ length: count }, (_, i) => ({
      fact,
      value: from + i,
      sources: [{ uri: `https://example.com/${subtask_id}/${i}` }],
    })),
  }
}

function post(fanoutId: string, body: unknown): InjectOptions {
  return { method: 'POST', url: `/v1/fanouts/${fanoutId}/results`, payload: body as object }
}

/** Asserts a 422 limit-exceeded naming `limit`, and that nothing was stored. */
async function refusedOverLimit(key: string, options: InjectOptions, limit: keyof typeof LIMITS) {
  const snapshot = await databaseSnapshotter(app.app.db)
  const before = await snapshot()
  const response: LightMyRequestResponse = await app.request(key, options)
  assert.equal(response.statusCode, 422, response.body)
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/)
  const problem = response.json()
  assert.equal(problem.type, 'urn:arbiter:problem:limit-exceeded')
  assert.equal(problem.limit, limit)
  assert.equal(problem.max, LIMITS[limit])
  assert.deepEqual(await snapshot(), before, 'nothing was stored')
  return problem
}

describe('POST /v1/fanouts/{id}/results: the limits of one result', () => {
  it('refuses the attack that exhausted the heap: two subtasks of one fact, 1,000 distinct claims each', async () => {
    const fanout = await createFanout(app, scout, fanoutBody(['st_1', 'st_2']))
    for (const subtask of ['st_1', 'st_2']) {
      const problem = await refusedOverLimit(
        scout,
        post(fanout.fanout_id, distinctClaims(subtask, 1000, subtask === 'st_1' ? 0 : 1000)),
        'claims_per_result',
      )
      assert.equal(problem.actual, 1000)
      assert.deepEqual(problem.errors, [
        { path: 'body/claims', message: 'over the limit claims_per_result (500)' },
      ])
    }
  })

  it('reconciles the same attack at the limits at once: 500 + 500 distinct positions are too_many_positions', async () => {
    const fanout = await createFanout(app, scout, fanoutBody(['st_1', 'st_2']))
    await submitResult(app, scout, fanout.fanout_id, distinctClaims('st_1', LIMITS.claims_per_result))
    await submitResult(app, scout, fanout.fanout_id, distinctClaims('st_2', LIMITS.claims_per_result, 500))
    const started = performance.now()
    const response = await app.request(scout, {
      method: 'POST',
      url: `/v1/fanouts/${fanout.fanout_id}/reconcile`,
    })
    const elapsed = performance.now() - started
    assert.equal(response.statusCode, 200, response.body)
    const fact = response.json().manifest.facts[0]
    assert.equal(fact.status, 'contested')
    assert.equal(fact.reason, 'too_many_positions')
    assert.equal(fact.positions.length, 1000)
    assert.equal(fact.claims.length, 1000)
    assert.deepEqual(fact.conflicts, [])
    assert.ok(response.body.length < 1024 * 1024, `a manifest of ${response.body.length} bytes`)
    assert.ok(elapsed < 10_000, `reconciled in ${Math.round(elapsed)} ms`)
  })

  it('refuses a claim with more sources, or qualifiers, than a claim may have', async () => {
    const fanout = await createFanout(app, scout, fanoutBody(['st_1']))
    const body = distinctClaims('st_1', 2)
    const sources = Array.from({ length: LIMITS.sources_per_claim + 1 }, (_, i) => ({ uri: `crm://n/${i}` }))
    const overSources = { ...body, claims: [body.claims[0], { ...body.claims[1], sources }] }
    const problem = await refusedOverLimit(scout, post(fanout.fanout_id, overSources), 'sources_per_claim')
    assert.deepEqual(problem.errors, [
      { path: 'body/claims/1/sources', message: 'over the limit sources_per_claim (20)' },
    ])

    const qualifiers = Object.fromEntries(
      Array.from({ length: LIMITS.qualifiers_per_claim + 1 }, (_, i) => [`k${i}`, 'v']),
    )
    await refusedOverLimit(
      scout,
      post(fanout.fanout_id, { ...body, claims: [{ ...body.claims[0], qualifiers }] }),
      'qualifiers_per_claim',
    )
    await refusedOverLimit(
      scout,
      post(fanout.fanout_id, {
        ...body,
        claims: [{ ...body.claims[0], qualifiers: { ['k'.repeat(LIMITS.qualifier_key_length + 1)]: 'v' } }],
      }),
      'qualifier_key_length',
    )
    await refusedOverLimit(
      scout,
      post(fanout.fanout_id, {
        ...body,
        claims: [{ ...body.claims[0], qualifiers: { k: 'é'.repeat(LIMITS.qualifier_value_length + 1) } }],
      }),
      'qualifier_value_length',
    )
  })

  it('accepts a result exactly at every limit of one result', async () => {
    const fanout = await createFanout(app, scout, fanoutBody(['st_1']))
    const qualifiers = Object.fromEntries(
      Array.from({ length: LIMITS.qualifiers_per_claim }, (_, i) => [
        `${i}`.padEnd(LIMITS.qualifier_key_length, 'k'),
        'é'.repeat(LIMITS.qualifier_value_length),
      ]),
    )
    const sources = Array.from({ length: LIMITS.sources_per_claim }, (_, i) => ({ uri: `crm://n/${i}` }))
    const body = distinctClaims('st_1', LIMITS.claims_per_result)
    body.claims[0] = { ...body.claims[0]!, qualifiers, sources } as (typeof body.claims)[0]
    await submitResult(app, scout, fanout.fanout_id, body)
  })

  it('answers 403 before naming a limit to a caller who does not own the fan-out', async () => {
    const fanout = await createFanout(app, scout, fanoutBody(['st_1']))
    const response = await app.request(rival, post(fanout.fanout_id, distinctClaims('st_1', 501)))
    assert.equal(response.statusCode, 403, response.body)
  })

  it(`refuses the ${LIMITS.results_per_subtask + 1}st revision of one subtask's result`, async () => {
    const fanout = await createFanout(app, scout, fanoutBody(['st_1']))
    for (let revision = 1; revision <= LIMITS.results_per_subtask; revision++) {
      await submitResult(app, scout, fanout.fanout_id, distinctClaims('st_1', 1, revision))
    }
    await refusedOverLimit(scout, post(fanout.fanout_id, distinctClaims('st_1', 1, 0)), 'results_per_subtask')
    // The latest one sent again is still the same body: 200.
    await submitResult(
      app,
      scout,
      fanout.fanout_id,
      distinctClaims('st_1', 1, LIMITS.results_per_subtask),
      200,
    )
  })
})

describe('POST /v1/fanouts/{id}/results: the limits of a fan-out’s latest results together', () => {
  it(`refuses the result that takes the fan-out past ${LIMITS.claims_per_fanout} claims; a smaller revision fits`, async () => {
    const subtasks = Array.from({ length: 11 }, (_, i) => `st_${i}`)
    const fanout = await createFanout(app, scout, fanoutBody(subtasks))
    for (const [i, subtask] of subtasks.slice(0, 10).entries()) {
      await submitResult(app, scout, fanout.fanout_id, distinctClaims(subtask, 500, i * 500))
    }
    const problem = await refusedOverLimit(
      scout,
      post(fanout.fanout_id, distinctClaims('st_10', 1)),
      'claims_per_fanout',
    )
    assert.equal(problem.actual, LIMITS.claims_per_fanout + 1)
    // A revision replaces its subtask's claims: 499 in place of 500 leaves room for one.
    await submitResult(app, scout, fanout.fanout_id, distinctClaims('st_0', 499))
    await submitResult(app, scout, fanout.fanout_id, distinctClaims('st_10', 1))
  })

  it('counts concurrent first results of different subtasks together', async () => {
    const subtasks = Array.from({ length: 12 }, (_, i) => `st_${i}`)
    const fanout = await createFanout(app, scout, fanoutBody(subtasks))
    const answers = await Promise.all(
      subtasks.map((subtask, i) =>
        app.request(scout, post(fanout.fanout_id, distinctClaims(subtask, 500, i * 500))),
      ),
    )
    const statuses = answers.map((answer) => answer.statusCode).sort()
    assert.deepEqual(statuses, [...Array(10).fill(201), 422, 422])
    const view = (await app.request(scout, { method: 'GET', url: `/v1/fanouts/${fanout.fanout_id}` })).json()
    assert.equal(view.results.length, 10)
  })

  it(`refuses the result that takes the latest results past ${LIMITS.fanout_results_bytes} bytes`, async () => {
    const subtasks = ['st_0', 'st_1', 'st_2']
    const fanout = await createFanout(app, scout, fanoutBody(subtasks))
    const padded = (subtask: string) => ({
      ...distinctClaims(subtask, 1),
      evidence: ['x'.repeat(400 * 1024)],
    })
    await submitResult(app, scout, fanout.fanout_id, padded('st_0'))
    await submitResult(app, scout, fanout.fanout_id, padded('st_1'))
    await refusedOverLimit(scout, post(fanout.fanout_id, padded('st_2')), 'fanout_results_bytes')
  })

  it('refuses a result whose qualifiers would make the next manifest pass 4 MiB, though it meets every other limit', async () => {
    const facts = Array.from({ length: 10 }, (_, i) => `f${i}`)
    const subtasks = Array.from({ length: 8 }, (_, i) => `st_${i}`)
    const fanout = await createFanout(app, scout, fanoutBody(subtasks, facts))
    // Qualifier names and values of control characters, which canonical JSON writes six bytes each, 16 distinct
    // positions to a fact: every pair listed, each pair repeating both sides' qualifiers.
    const escaped = '\u0001'
    const worst = (subtask: string) => ({
      subtask_id: subtask,
      status: 'DONE',
      summary: 'done',
      evidence: ['notes'],
      claims: facts.flatMap((fact) =>
        Array.from({ length: 2 }, (_, i) => ({
          fact,
          value: `${subtask}-${i}`,
          qualifiers: Object.fromEntries(
            Array.from({ length: 8 }, (_, k) => [
              `${k}`.padEnd(64, escaped),
              `${subtask}${i}`.padEnd(128, escaped),
            ]),
          ),
          sources: [{ uri: `crm://${subtask}/${fact}/${i}` }],
        })),
      ),
    })
    let refused: string | undefined
    for (const subtask of subtasks) {
      const response = await app.request(scout, post(fanout.fanout_id, worst(subtask)))
      if (response.statusCode === 422) {
        assert.equal(response.json().limit, 'manifest_bytes')
        refused = subtask
        break
      }
      assert.equal(response.statusCode, 201, response.body)
    }
    assert.ok(refused, 'a result was refused before the manifest could pass 4 MiB')
    const envelope = await reconcileFanout(app, scout, fanout.fanout_id, 200, { close: true })
    const size = Buffer.byteLength(JSON.stringify(envelope.manifest))
    assert.ok(size <= LIMITS.manifest_bytes, `the manifest is ${size} bytes`)
  })
})
