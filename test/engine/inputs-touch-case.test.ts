import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, it } from 'node:test'
import { tallyModule } from '../cases/tally/module.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import {
  createFanout,
  doneWith,
  FLOOR,
  ST3_RESULT,
  submitResult,
  vantageBody,
} from '../helpers/fanout-fixtures.ts'
import { CRITERION, createOutcome, interpret } from '../helpers/fixtures.ts'
import { createReview, judge, verdict } from '../helpers/review-fixtures.ts'

/*
 * The invariant the engine's decision without a lock stands on (src/engine/evaluate-case.ts, case-inputs.ts): a
 * decision reads the case row's version and its inputs, and writes only while the row is still at that version,
 * so every write of an input must give the case row a new version. Checked here over every path that writes an
 * input, each kind's one-statement path and its transaction: the row's version (xmin) before and after.
 */

async function rowVersion(app: TestApp, table: string, id: string): Promise<string> {
  const { rows } = await app.app.services.db.query<{ v: string }>(
    `SELECT xmin::text AS v FROM ${table} WHERE id = $1`,
    [id],
  )
  assert.equal(rows.length, 1, `${table} ${id}`)
  return rows[0]!.v
}

/** Runs `write` and asserts it moved the case row to a new version. */
async function assertTouches(
  app: TestApp,
  table: string,
  id: string,
  path: string,
  write: () => Promise<unknown>,
) {
  const before = await rowVersion(app, table, id)
  await write()
  assert.notEqual(await rowVersion(app, table, id), before, `${path} writes an input and must touch ${table}`)
}

describe('every path that writes an input touches the case row', () => {
  it('outcomes: a first interpretation, a revision, evidence', async (t) => {
    const app = await buildTestApp(t)
    const a = await app.key('orchestrator', ['orch-a'])
    const { outcome_id: id } = await createOutcome(app, a, { expected_orchestrators: ['orch-a', 'orch-b'] })
    const first = { orchestrator_id: 'orch-a', outcome_interpretation: 'success' as const }
    await assertTouches(app, 'outcomes', id, 'a first interpretation (one statement)', () =>
      interpret(app, a, id, first),
    )
    await assertTouches(app, 'outcomes', id, 'a revised interpretation (transaction)', () =>
      interpret(app, a, id, { ...first, outcome_interpretation: 'failure' }),
    )
    await assertTouches(app, 'outcomes', id, 'a criterion over its limit takes the transaction', async () => {
      // Refused: nothing written, and nothing needs to be; the next write must still touch.
      const big = { require: ['x'.repeat(70_000)] }
      const refused = await app.request(a, {
        method: 'POST',
        url: `/v1/outcomes/${id}/interpretations`,
        payload: { ...first, success_criterion: big },
      })
      assert.ok(refused.statusCode >= 400, refused.body)
      await interpret(app, a, id, { ...first, success_criterion: { ...CRITERION, min_confidence: 0.5 } })
    })
    await assertTouches(app, 'outcomes', id, 'appended evidence (transaction)', async () => {
      const response = await app.request(a, {
        method: 'POST',
        url: `/v1/outcomes/${id}/evidence`,
        payload: { evidence: [{ kind: 'log', content: 'one more line' }] },
      })
      assert.equal(response.statusCode, 201, response.body)
    })
  })

  it('fan-outs: a first result, a revision', async (t) => {
    const app = await buildTestApp(t)
    const scout = await app.key('orchestrator', ['scout'])
    const { fanout_id: id } = await createFanout(app, scout, vantageBody())
    await assertTouches(app, 'fanouts', id, 'a first result (one statement)', () =>
      submitResult(app, scout, id, ST3_RESULT),
    )
    await assertTouches(app, 'fanouts', id, 'a revised result (transaction)', () =>
      submitResult(app, scout, id, doneWith('st_3', [{ fact: FLOOR, value: 1 }])),
    )
  })

  it('reviews: a verdict, and every verdict row written by any path', async (t) => {
    const app = await buildTestApp(t)
    const a = await app.key('orchestrator', ['orch-a'])
    const { review_id: id } = await createReview(app, a, 'council')
    await assertTouches(app, 'reviews', id, 'a verdict (one statement)', () =>
      judge(app, a, id, verdict('c1', 'DONE')),
    )
    // The transaction's path writes the same verdict row; the trigger on review_verdicts touches the review for
    // any writer of it. Shown with a row inserted by hand and rolled back.
    const client = await app.app.services.db.connect()
    let before: string
    let after: string
    try {
      await client.query('BEGIN')
      before = (await client.query('SELECT xmin::text AS v FROM reviews WHERE id = $1', [id])).rows[0].v
      await client.query(
        `INSERT INTO review_verdicts (id, review_id, revision, judge_id, attempt, status, body, verdict_digest,
           received_at)
         SELECT gen_random_uuid(), id, revision, 'c2', 1, 'DONE', '{}', 'sha256:x', now() FROM reviews WHERE id = $1`,
        [id],
      )
      after = (await client.query('SELECT xmin::text AS v FROM reviews WHERE id = $1', [id])).rows[0].v
    } finally {
      await client.query('ROLLBACK')
      client.release()
    }
    assert.notEqual(after, before, 'a verdict written by any statement touches its review')
  })

  it('a kind written outside src/ (the test tally): its votes, through writeInput', async (t) => {
    const app = await buildTestApp(t, { extraCaseKinds: [tallyModule] })
    await app.app.services.db.query(
      await readFile(new URL('../cases/tally/migration.sql', import.meta.url), 'utf8'),
    )
    const writer = await app.key('orchestrator', ['o1'])
    const created = await app.request(writer, { method: 'POST', url: '/v1/tallies' })
    const id = created.json().tally_id as string
    await assertTouches(app, 'tallies', id, 'a vote (transaction)', async () => {
      const vote = await app.request(writer, {
        method: 'POST',
        url: `/v1/tallies/${id}/votes`,
        payload: { voter: 'v1', choice: 'yes' },
      })
      assert.equal(vote.statusCode, 201, vote.body)
    })
  })
})
