import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions } from 'fastify'
import { LIMITS } from '../../src/domain/limits.ts'
import { canonicalJson } from '../../src/domain/shared/canonical-json.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { databaseSnapshotter } from '../helpers/db-snapshot.ts'
import { createOutcome, EVIDENCE, evaluate, interpret, uniqueRun } from '../helpers/fixtures.ts'

/**
 * The limits on outcomes (docs/limits.md): each refused where its input arrives, as 422 `limit-exceeded` naming
 * the limit and its value, with nothing stored; and no accepted input makes the next manifest pass 4 MiB.
 */

const cleanups: Array<() => unknown> = []
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})
const suite = { after: (fn: () => unknown) => void cleanups.push(fn) } as Parameters<typeof buildTestApp>[0]

const ORCHESTRATORS = Array.from({ length: 20 }, (_, i) => `orch-${String(i).padStart(2, '0')}`)

let app: TestApp
let key: string
before(async () => {
  app = await buildTestApp(suite)
  key = await app.key('orchestrator', ORCHESTRATORS)
})

async function refusedOverLimit(options: InjectOptions, limit: keyof typeof LIMITS) {
  const snapshot = await databaseSnapshotter(app.app.db)
  const before = await snapshot()
  const response = await app.request(key, options)
  assert.equal(response.statusCode, 422, response.body)
  const problem = response.json()
  assert.equal(problem.type, 'urn:arbiter:problem:limit-exceeded')
  assert.equal(problem.limit, limit)
  assert.equal(problem.max, LIMITS[limit])
  assert.deepEqual(await snapshot(), before, 'nothing was stored')
  return problem
}

const interpretation = (outcomeId: string, body: Record<string, unknown>): InjectOptions => ({
  method: 'POST',
  url: `/v1/outcomes/${outcomeId}/interpretations`,
  payload: { outcome_interpretation: 'success', success_criterion: { min: 1 }, ...body },
})

const items = (count: number, from = 0) =>
  Array.from({ length: count }, (_, i) => ({ kind: 'log', content: { line: from + i } }))

/** A criterion of exactly `bytes` canonical bytes. */
function criterionOf(bytes: number) {
  const frame = canonicalJson({ note: '' }).length
  return { note: 'x'.repeat(bytes - frame) }
}

describe('outcomes: orchestrators', () => {
  it(`creates an outcome expecting ${LIMITS.orchestrators_per_outcome} orchestrators, refuses one expecting more`, async () => {
    await createOutcome(app, key, { expected_orchestrators: ORCHESTRATORS.slice(0, 16) })
    await refusedOverLimit(
      {
        method: 'POST',
        url: '/v1/outcomes',
        payload: {
          subagent_id: 'a',
          run_id: uniqueRun(),
          evidence: EVIDENCE,
          expected_orchestrators: ORCHESTRATORS.slice(0, 17),
        },
      },
      'orchestrators_per_outcome',
    )
  })

  it('refuses a 17th orchestrator, expected and interpreting counted together', async () => {
    const outcome = await createOutcome(app, key, { expected_orchestrators: ORCHESTRATORS.slice(0, 10) })
    for (const id of ORCHESTRATORS.slice(5, 16)) {
      await interpret(app, key, outcome.outcome_id, {
        orchestrator_id: id,
        outcome_interpretation: 'success',
      })
    }
    await refusedOverLimit(
      interpretation(outcome.outcome_id, { orchestrator_id: ORCHESTRATORS[16] }),
      'orchestrators_per_outcome',
    )
    // One of the 16 may still revise.
    await interpret(app, key, outcome.outcome_id, {
      orchestrator_id: ORCHESTRATORS[0]!,
      outcome_interpretation: 'failure',
    })
  })

  it('counts concurrent first interpretations of new orchestrators together: 16 of 20 accepted', async () => {
    const outcome = await createOutcome(app, key)
    const answers = await Promise.all(
      ORCHESTRATORS.map((id) =>
        app.request(key, interpretation(outcome.outcome_id, { orchestrator_id: id })),
      ),
    )
    const statuses = answers.map((answer) => answer.statusCode).sort()
    assert.deepEqual(statuses, [...Array(16).fill(201), ...Array(4).fill(422)])
    const view = (await app.request(key, { method: 'GET', url: `/v1/outcomes/${outcome.outcome_id}` })).json()
    assert.equal(view.interpretations.length, 16)
  })

  it('refuses a sub-agent policy expecting more orchestrators than an outcome may have', async () => {
    const response = await app.request(app.adminKey, {
      method: 'PUT',
      url: `/v1/subagents/${uniqueRun('agent')}/policy`,
      payload: { expected_orchestrators: ORCHESTRATORS.slice(0, 17) },
    })
    assert.equal(response.statusCode, 422, response.body)
    assert.equal(response.json().limit, 'orchestrators_per_outcome')
  })
})

describe('outcomes: criteria, revisions, evidence', () => {
  it(`accepts a criterion of ${LIMITS.success_criterion_bytes} bytes, refuses one byte more`, async () => {
    const outcome = await createOutcome(app, key)
    await interpret(app, key, outcome.outcome_id, {
      orchestrator_id: ORCHESTRATORS[0]!,
      outcome_interpretation: 'success',
      success_criterion: criterionOf(LIMITS.success_criterion_bytes),
    })
    const problem = await refusedOverLimit(
      interpretation(outcome.outcome_id, {
        orchestrator_id: ORCHESTRATORS[1],
        success_criterion: criterionOf(LIMITS.success_criterion_bytes + 1),
      }),
      'success_criterion_bytes',
    )
    assert.equal(problem.actual, LIMITS.success_criterion_bytes + 1)
  })

  it(`refuses an orchestrator's ${LIMITS.revisions_per_orchestrator + 1}st revision`, async () => {
    const outcome = await createOutcome(app, key)
    for (let i = 1; i <= LIMITS.revisions_per_orchestrator; i++) {
      await interpret(app, key, outcome.outcome_id, {
        orchestrator_id: ORCHESTRATORS[0]!,
        outcome_interpretation: 'success',
        success_criterion: { revision: i },
      })
    }
    await refusedOverLimit(
      interpretation(outcome.outcome_id, {
        orchestrator_id: ORCHESTRATORS[0],
        success_criterion: { revision: 0 },
      }),
      'revisions_per_orchestrator',
    )
  })

  it(`holds an outcome to ${LIMITS.evidence_items_per_outcome} evidence items listed over all its versions`, async () => {
    await refusedOverLimit(
      {
        method: 'POST',
        url: '/v1/outcomes',
        payload: { subagent_id: 'a', run_id: uniqueRun(), evidence: items(1001) },
      },
      'evidence_items_per_outcome',
    )
    const outcome = await createOutcome(app, key, { evidence: items(400) })
    const append = (evidence: unknown[]): InjectOptions => ({
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/evidence`,
      payload: { evidence },
    })
    // Version 2 lists its 600 items beside version 1's 400: 1,000 together.
    assert.equal((await app.request(key, append(items(200, 400)))).statusCode, 201)
    // Items it already has add nothing, and are not refused.
    const again = await app.request(key, append(items(10)))
    assert.ok(again.statusCode < 300, again.body)
    assert.equal(again.json().evidence.length, 600)
    await refusedOverLimit(append(items(1, 600)), 'evidence_items_per_outcome')
  })

  it('bounds the outcome view under appends of one item at a time', async () => {
    const outcome = await createOutcome(app, key, { evidence: items(1) })
    let accepted = 1
    for (let next = 1; next < 100; next++) {
      const response = await app.request(key, {
        method: 'POST',
        url: `/v1/outcomes/${outcome.outcome_id}/evidence`,
        payload: { evidence: items(1, next) },
      })
      if (response.statusCode === 422) {
        assert.equal(response.json().limit, 'evidence_items_per_outcome')
        break
      }
      assert.equal(response.statusCode, 201, response.body)
      accepted++
    }
    // Versions of 1, 2, … k items list k(k+1)/2 hashes: the largest k within 1,000 is 44.
    assert.equal(accepted, 44)
    const view = await app.request(key, { method: 'GET', url: `/v1/outcomes/${outcome.outcome_id}` })
    const listed = (view.json().evidence_versions as { item_hashes: string[] }[]).reduce(
      (sum, version) => sum + version.item_hashes.length,
      0,
    )
    assert.ok(listed <= LIMITS.evidence_items_per_outcome, `${listed} item hashes listed`)
  })
})

describe('outcomes: the next manifest stays within 4 MiB', () => {
  it('refuses the criterion of thousands of tiny leaves that would make it larger', async () => {
    const outcome = await createOutcome(app, key)
    // Arrays nested deep, then small numbers: two bytes each in the criterion, a long pointer each in a divergence.
    const deep = (seed: number) => {
      let value: unknown = Array.from({ length: 1500 }, (_, i) => (i + seed) % 10)
      for (let depth = 0; depth < 40; depth++) value = [value]
      return value
    }
    let refused = false
    for (const [i, id] of ORCHESTRATORS.slice(0, 16).entries()) {
      const response = await app.request(
        key,
        interpretation(outcome.outcome_id, {
          orchestrator_id: id,
          outcome_interpretation: i % 2 === 0 ? 'success' : 'failure',
          success_criterion: deep(i),
        }),
      )
      if (response.statusCode === 422) {
        assert.equal(response.json().limit, 'manifest_bytes')
        refused = true
        break
      }
      assert.equal(response.statusCode, 201, response.body)
    }
    assert.ok(refused, 'an interpretation was refused')
    const envelope = await evaluate(app, key, outcome.outcome_id)
    assert.ok(Buffer.byteLength(canonicalJson(envelope.manifest)) <= LIMITS.manifest_bytes)
  })

  it('refuses the interpretations of evidence versions a thousand items apart that would make it larger', async () => {
    const outcome = await createOutcome(app, key, { evidence: items(1) })
    const first = outcome.evidence_hash
    const appended = await app.request(key, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/evidence`,
      payload: { evidence: items(998, 1) },
    })
    assert.equal(appended.statusCode, 201, appended.body)
    let refused = 0
    for (const [i, id] of ORCHESTRATORS.slice(0, 16).entries()) {
      const response = await app.request(
        key,
        interpretation(outcome.outcome_id, {
          orchestrator_id: id,
          outcome_interpretation: i % 2 === 0 ? 'success' : 'failure',
          ...(i % 2 === 0 ? { evidence_hash: first } : {}),
        }),
      )
      if (response.statusCode === 422) {
        assert.equal(response.json().limit, 'manifest_bytes')
        refused++
      } else assert.equal(response.statusCode, 201, response.body)
    }
    assert.ok(refused > 0, 'an interpretation was refused')
    const envelope = await evaluate(app, key, outcome.outcome_id)
    const size = Buffer.byteLength(canonicalJson(envelope.manifest))
    assert.ok(size <= LIMITS.manifest_bytes, `${size} bytes`)
    assert.ok(size > LIMITS.manifest_bytes / 4, `close to the limit still (${size} bytes)`)
  })

  it('accepts 16 orchestrators on an outcome of 1,000 evidence items all judging its latest version', async () => {
    const outcome = await createOutcome(app, key, { evidence: items(1000) })
    for (const [i, id] of ORCHESTRATORS.slice(0, 16).entries()) {
      await interpret(app, key, outcome.outcome_id, {
        orchestrator_id: id,
        outcome_interpretation: (['success', 'partial', 'failure'] as const)[i % 3]!,
        success_criterion: { threshold: i, require: ['exit_code == 0', 'receipt present'] },
        intended_action: { kind: 'compensate', resources: [`refund:${i}`] },
      })
    }
    const envelope = await evaluate(app, key, outcome.outcome_id)
    assert.equal(envelope.manifest.interpretations.length, 16)
  })
})
