import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { LIMITS } from '../../src/domain/limits.ts'
import { canonicalJson, sha256 } from '../../src/domain/shared/canonical-json.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { databaseSnapshotter } from '../helpers/db-snapshot.ts'
import { createReview, judge, postDecide, postVerdict, verdict } from '../helpers/review-fixtures.ts'

/**
 * The limits on review verdicts (docs/limits.md): findings per verdict and the size of one verdict, refused where
 * the verdict arrives as 422 `limit-exceeded`; at the largest a council allows, the manifest stays within 4 MiB.
 */

const cleanups: Array<() => unknown> = []
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})
const suite = { after: (fn: () => unknown) => void cleanups.push(fn) } as Parameters<typeof buildTestApp>[0]

let app: TestApp
let a: string
before(async () => {
  app = await buildTestApp(suite)
  a = await app.key('orchestrator', ['orch-a'])
})

/** A council of ten judges with the longest ids and models allowed. */
const COUNCIL = Array.from({ length: 10 }, (_, i) => ({
  judge_id: `${i}`.padEnd(100, 'j'),
  model: `model-${i}`.padEnd(200, 'm'),
  context_id: `ctx-${i}`,
}))

function findings(count: number, title: (i: number) => string, location: (i: number) => string) {
  return Array.from({ length: count }, (_, i) => ({
    severity: 'high',
    title: title(i),
    location: location(i),
  }))
}

async function refusedOverLimit(reviewId: string, body: Record<string, unknown>, limit: keyof typeof LIMITS) {
  const snapshot = await databaseSnapshotter(app.app.db)
  const before = await snapshot()
  const response = await postVerdict(app, a, reviewId, body)
  assert.equal(response.statusCode, 422, response.body)
  const problem = response.json()
  assert.equal(problem.type, 'urn:arbiter:problem:limit-exceeded')
  assert.equal(problem.limit, limit)
  assert.equal(problem.max, LIMITS[limit])
  assert.deepEqual(await snapshot(), before, 'nothing was stored')
  return problem
}

describe('POST /v1/reviews/{id}/verdicts: limits', () => {
  it(`refuses a verdict of ${LIMITS.findings_per_verdict + 1} findings`, async () => {
    const review = await createReview(app, a, 'council', { judges: COUNCIL })
    const body = verdict(COUNCIL[0]!.judge_id, 'DONE', 0, {
      findings: findings(
        LIMITS.findings_per_verdict + 1,
        (i) => `t${i}`,
        (i) => `l${i}`,
      ),
    })
    const problem = await refusedOverLimit(review.review_id, body, 'findings_per_verdict')
    assert.equal(problem.actual, LIMITS.findings_per_verdict + 1)
  })

  it(`refuses a verdict over ${LIMITS.verdict_bytes} bytes of canonical JSON`, async () => {
    const review = await createReview(app, a, 'council', { judges: COUNCIL })
    const body = verdict(COUNCIL[0]!.judge_id, 'DONE_WITH_CONCERNS', 0, {
      concerns: Array.from({ length: 40 }, (_, i) => `${i}`.padEnd(4000, 'c')),
    })
    const problem = await refusedOverLimit(review.review_id, body, 'verdict_bytes')
    assert.equal(problem.actual, Buffer.byteLength(canonicalJson(body)))
  })

  it('accepts ten judges × 200 findings at the largest a verdict may be, and signs a manifest within 4 MiB', async () => {
    const review = await createReview(app, a, 'council', { judges: COUNCIL })
    for (const [j, member] of COUNCIL.entries()) {
      // Titles of a letter that lower-cases to three bytes from two; distinct per judge, so nothing merges.
      let count = LIMITS.findings_per_verdict
      let body = verdict(member.judge_id, 'DONE', 0, {
        findings: findings(
          count,
          (i) => `${j}-${i} ${'İ'.repeat(150)}`,
          (i) => `src/${j}/${i}.ts`,
        ),
      })
      while (Buffer.byteLength(canonicalJson(body)) > LIMITS.verdict_bytes) {
        count--
        body = verdict(member.judge_id, 'DONE', 0, {
          findings: findings(
            count,
            (i) => `${j}-${i} ${'İ'.repeat(150)}`,
            (i) => `src/${j}/${i}.ts`,
          ),
        })
      }
      await judge(app, a, review.review_id, body)
    }
    const workers = app.app.services.decisionWorkers!
    const done = workers.tasksDone
    const response = await postDecide(app, a, review.review_id)
    assert.equal(response.statusCode, 200, response.body)
    // A panel of thousands of findings is decided in a worker thread (src/engine/decision-workers.ts).
    assert.equal(workers.tasksDone, done + 1, 'the decision was made by a worker')
    const manifest = response.json().manifest
    assert.equal(response.json().manifest_digest, sha256(canonicalJson(manifest)))
    const size = Buffer.byteLength(canonicalJson(manifest))
    assert.ok(size <= LIMITS.manifest_bytes, `${size} bytes`)
    assert.ok(manifest.findings.length > 1000)
  })
})
