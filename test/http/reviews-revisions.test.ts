import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import pg from 'pg'
import { fanoutResultBody } from '../../src/cases/fanout/schemas.ts'
import {
  reviewDecisionUpdateIf,
  reviewWithVersion,
  type VerdictRow,
  verdictInsert,
  verdictInsertIf,
} from '../../src/cases/review/repository.ts'
import { queryFirst, queryOne } from '../../src/db/statement.ts'
import { hashJson, type JsonValue } from '../../src/domain/shared/canonical-json.ts'
import { signedPart } from '../helpers/fixtures.ts'
import {
  createReview,
  DIGEST_0,
  DIGEST_1,
  DIGEST_2,
  DIGEST_3,
  decide,
  getReview,
  judge,
  postDecide,
  postRevision,
  postVerdict,
  sharedReviewApp,
  verdict,
} from '../helpers/review-fixtures.ts'
import { bodyErrors } from './schemas/body-errors.ts'

/**
 * A review over time: revisions after REVISE and their ceiling, verdict state within a revision (one verdict
 * per judge, a NEEDS_CONTEXT replaced once answered, stale and late verdicts refused), the status report
 * enforced by the same code as fan-out results, and racing verdicts of one judge.
 */
const setup = sharedReviewApp()

async function auditKinds(reviewId: string): Promise<string[]> {
  const { app } = await setup()
  const ops = await app.key('ops')
  const story = await app.request(ops, { method: 'GET', url: `/v1/audit/reviews/${reviewId}` })
  return story.json().records.map((r: { kind: string }) => r.kind)
}

/** Polls `check` every 20 ms for up to 5 s. */
async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let waited = 0; waited < 5_000; waited += 20) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.fail(`timed out waiting for ${what}`)
}

describe('POST /v1/reviews/{id}/revisions', () => {
  it('starts revision 1 after a REVISE: verdicts start afresh, the old revision takes no more', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'do_and_judge')
    await judge(app, a, review.review_id, verdict('solo', 'BLOCKED'))
    const { manifest: revise } = await decide(app, a, review.review_id)
    assert.equal(revise.directive, 'REVISE')

    const response = await postRevision(app, a, review.review_id, DIGEST_1)
    assert.equal(response.statusCode, 201, response.body)
    const revised = response.json()
    assert.equal(revised.revision, 1)
    assert.deepEqual(revised.subject, {
      digest: DIGEST_1,
      description: `revised to ${DIGEST_1.slice(-4)}`,
      uri: null,
    })
    assert.deepEqual(revised.verdicts, [])
    assert.equal(revised.status, 'open')
    assert.equal(revised.manifest_id, revise.manifest_id, 'the latest manifest is still the REVISE')
    assert.deepEqual(await getReview(app, a, review.review_id), revised)

    // The old revision is over: its verdicts are stale, naming the REVISE that ended it.
    const stale = await postVerdict(app, a, review.review_id, verdict('solo', 'DONE', 0))
    assert.equal(stale.statusCode, 409, stale.body)
    assert.equal(stale.json().manifest_id, revise.manifest_id)
    assert.equal(stale.json().revision, 1)
    assert.deepEqual((await postDecide(app, a, review.review_id)).json(), {
      status: 'pending',
      missing_judges: ['solo'],
    })

    // The same judge returns afresh, even with the body it sent for revision 0 (but for revision 1).
    await judge(app, a, review.review_id, verdict('solo', 'DONE', 1))
    const { manifest: apply } = await decide(app, a, review.review_id)
    assert.equal(apply.directive, 'APPLY')
    assert.equal(apply.revision, 1)
    assert.deepEqual(apply.subject, revised.subject)
    assert.equal(apply.supersedes, null, 'a REVISE ends its revision; it is not superseded')

    const afterApply = await postRevision(app, a, review.review_id, DIGEST_2)
    assert.equal(afterApply.statusCode, 409, afterApply.body)
    assert.equal(afterApply.json().manifest_id, apply.manifest_id)
    assert.deepEqual(await auditKinds(review.review_id), [
      'review.created',
      'verdict.recorded',
      'manifest.issued',
      'revision.recorded',
      'verdict.recorded',
      'manifest.issued',
    ])
  })

  it('hands back at the ceiling: BLOCKED at revision 2 is HAND_BACK, and a third revision changes nothing', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'two_stage')
    const digests = [DIGEST_0, DIGEST_1, DIGEST_2]
    let last: Awaited<ReturnType<typeof decide>>['manifest'] | undefined
    for (const revision of [0, 1, 2]) {
      if (revision > 0) {
        const response = await postRevision(app, a, review.review_id, digests[revision]!)
        assert.equal(response.statusCode, 201, response.body)
      }
      await judge(app, a, review.review_id, verdict('spec', 'BLOCKED', revision))
      last = (await decide(app, a, review.review_id)).manifest
      assert.equal(last.revision, revision)
      assert.equal(last.directive, revision < 2 ? 'REVISE' : 'HAND_BACK')
      assert.equal(last.verdict, 'BLOCKED')
    }
    const handedBack = await getReview(app, a, review.review_id)
    assert.equal(handedBack.status, 'handed_back')
    assert.equal(handedBack.manifest_id, last!.manifest_id)

    const third = await postRevision(app, a, review.review_id, DIGEST_3)
    assert.equal(third.statusCode, 409, third.body)
    assert.equal(third.json().manifest_id, last!.manifest_id)
    assert.match(third.json().detail, /ceiling/)
    assert.deepEqual(
      await getReview(app, a, review.review_id),
      handedBack,
      'the third revision changed nothing',
    )
    const late = await postVerdict(app, a, review.review_id, verdict('spec', 'DONE', 2))
    assert.equal(late.statusCode, 409)
    assert.equal(late.json().manifest_id, last!.manifest_id)
    const again = await decide(app, a, review.review_id)
    assert.equal(again.manifest.manifest_id, last!.manifest_id, 'decide returns the final manifest')
    const kinds = await auditKinds(review.review_id)
    assert.equal(kinds.filter((k) => k === 'revision.recorded').length, 2)
    assert.equal(kinds.filter((k) => k === 'manifest.issued').length, 3)
  })

  it('refuses an unchanged digest (422), a revision without a REVISE (409), and a stale second revision (409)', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'do_and_judge')
    const unchanged = await postRevision(app, a, review.review_id, DIGEST_0)
    assert.equal(unchanged.statusCode, 422, unchanged.body)
    const early = await postRevision(app, a, review.review_id, DIGEST_1)
    assert.equal(early.statusCode, 409, early.body)
    assert.equal(early.json().manifest_id, null)

    await judge(app, a, review.review_id, verdict('solo', 'NEEDS_CONTEXT'))
    const { manifest: pause } = await decide(app, a, review.review_id)
    const afterPause = await postRevision(app, a, review.review_id, DIGEST_1)
    assert.equal(afterPause.statusCode, 409, 'a PAUSE asks for an answer, not a revision')
    assert.equal(afterPause.json().manifest_id, pause.manifest_id)

    await judge(app, a, review.review_id, verdict('solo', 'BLOCKED'))
    const { manifest: revise } = await decide(app, a, review.review_id)
    assert.equal(revise.supersedes, pause.manifest_id)
    assert.equal((await postRevision(app, a, review.review_id, DIGEST_1)).statusCode, 201)
    const stale = await postRevision(app, a, review.review_id, DIGEST_2)
    assert.equal(stale.statusCode, 409, 'revision 1 has no REVISE of its own')
    assert.equal(stale.json().manifest_id, revise.manifest_id)
    assert.equal((await getReview(app, a, review.review_id)).revision, 1)
  })
})

describe('verdicts within a revision', () => {
  it('replaces a NEEDS_CONTEXT verdict once answered; each new manifest supersedes the PAUSE before it', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'do_and_judge')
    await judge(app, a, review.review_id, verdict('solo', 'NEEDS_CONTEXT'))
    const first = await decide(app, a, review.review_id)
    assert.equal(first.manifest.directive, 'PAUSE')
    assert.equal(first.manifest.blocking_question, 'solo asks: which currency?')
    assert.deepEqual(
      signedPart(await decide(app, a, review.review_id)),
      signedPart(first),
      'unchanged verdicts: the same PAUSE',
    )

    const same = await postVerdict(app, a, review.review_id, verdict('solo', 'NEEDS_CONTEXT'))
    assert.equal(same.statusCode, 200, 'the same body again is answered with the stored verdict')

    await judge(
      app,
      a,
      review.review_id,
      verdict('solo', 'NEEDS_CONTEXT', 0, { blocking_question: 'and which account?' }),
    )
    const second = await decide(app, a, review.review_id)
    assert.equal(second.manifest.directive, 'PAUSE')
    assert.equal(second.manifest.supersedes, first.manifest.manifest_id)
    assert.equal(second.manifest.blocking_question, 'and which account?')

    await judge(app, a, review.review_id, verdict('solo', 'DONE_WITH_CONCERNS'))
    const final = await decide(app, a, review.review_id)
    assert.equal(final.manifest.directive, 'APPLY')
    assert.equal(final.manifest.supersedes, second.manifest.manifest_id)
    assert.deepEqual(
      final.manifest.verdicts.map((v) => v.status),
      ['DONE_WITH_CONCERNS'],
      'the manifest lists the latest verdict of the judge',
    )
    assert.deepEqual(
      (await getReview(app, a, review.review_id)).verdicts.map((v) => v.status),
      ['DONE_WITH_CONCERNS'],
    )

    const after = await postVerdict(app, a, review.review_id, verdict('solo', 'DONE'))
    assert.equal(after.statusCode, 409)
    assert.equal(after.json().manifest_id, final.manifest.manifest_id)
    const replay = await postVerdict(app, a, review.review_id, verdict('solo', 'DONE_WITH_CONCERNS'))
    assert.equal(replay.statusCode, 200, 'the recorded verdict again is still a 200 once decided')
    assert.equal(
      (await auditKinds(review.review_id)).filter((k) => k === 'verdict.recorded').length,
      3,
      'one record per accepted verdict, none for repeats or refusals',
    )
  })

  it('refuses a different second verdict of a judge unless the first was NEEDS_CONTEXT', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'debate')
    await judge(app, a, review.review_id, verdict('amy', 'DONE'))
    const changed = await postVerdict(app, a, review.review_id, verdict('amy', 'BLOCKED'))
    assert.equal(changed.statusCode, 409, changed.body)
    assert.equal(changed.json().manifest_id, null)
    // A NEEDS_CONTEXT of the meta-judge may be replaced even after a PAUSE.
    await judge(app, a, review.review_id, verdict('moderator', 'NEEDS_CONTEXT'))
    await judge(app, a, review.review_id, verdict('zed', 'DONE'))
    const { manifest: pause } = await decide(app, a, review.review_id)
    assert.equal(pause.directive, 'PAUSE')
    await judge(app, a, review.review_id, verdict('moderator', 'DONE'))
    const { manifest: apply } = await decide(app, a, review.review_id)
    assert.equal(apply.directive, 'APPLY')
    assert.equal(apply.supersedes, pause.manifest_id)
  })

  it('lets exactly one of racing verdicts of one judge win', async () => {
    const { app, a } = await setup()
    const different = await createReview(app, a, 'council')
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        postVerdict(app, a, different.review_id, verdict('c1', 'DONE', 0, { summary: `take ${i}` })),
      ),
    )
    const codes = responses.map((r) => r.statusCode).sort()
    assert.deepEqual(codes, [201, ...Array(11).fill(409)], codes.join(','))

    const identical = await createReview(app, a, 'council')
    const same = await Promise.all(
      Array.from({ length: 12 }, () => postVerdict(app, a, identical.review_id, verdict('c2', 'BLOCKED'))),
    )
    assert.deepEqual(
      same.map((r) => r.statusCode).sort(),
      [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 201],
    )
    assert.equal(
      new Set(same.map((r) => r.json().received_at)).size,
      1,
      'every answer is the one stored verdict',
    )
    assert.equal((await auditKinds(identical.review_id)).filter((k) => k === 'verdict.recorded').length, 1)
  })

  it('writes no decision read before a verdict landed: every verdict moves the review row, even one written by SQL', async () => {
    const { app, a } = await setup()
    const db = app.app.services.db
    const review = await createReview(app, a, 'council')
    const id = review.review_id
    const version = async () => (await queryOne(db, reviewWithVersion(id))).row_version
    const versions = [await version()]
    assert.equal((await postVerdict(app, a, id, verdict('c1', 'DONE'))).statusCode, 201)
    versions.push(await version())
    // A verdict inserted as a replica of an earlier version would (no write to the review row of its own): the
    // database's trigger moves the row all the same.
    const raw = verdictInsert({
      id: randomUUID(),
      review_id: id,
      revision: 0,
      judge_id: 'c2',
      attempt: 1,
      status: 'DONE',
      body: verdict('c2', 'DONE') as unknown as VerdictRow['body'],
      verdict_digest: hashJson(verdict('c2', 'DONE') as unknown as JsonValue),
      received_at: new Date(),
      api_key_id: null,
    })
    await db.query(raw.text, raw.values)
    versions.push(await version())
    assert.equal(new Set(versions).size, 3)
    // A decision made from what was read before that verdict writes nothing.
    const stale = reviewDecisionUpdateIf(id, versions[1]!, {
      status: 'decided',
      manifestId: randomUUID(),
      revision: 0,
      directive: 'APPLY',
    })
    assert.equal((await db.query(stale.text, stale.values)).rowCount, 0)
    assert.equal((await postVerdict(app, a, id, verdict('c3', 'DONE'))).statusCode, 201)
    const { manifest } = await decide(app, a, id)
    assert.deepEqual(
      manifest.verdicts.map((v) => v.judge_id),
      ['c1', 'c2', 'c3'],
    )
  })

  it('writes no verdict judged against a review that changed since it was read: the transaction refuses it', {
    // On the embedded database a transaction holds the one session: nothing is read while it is open.
    skip: process.env.TEST_DATABASE_URL ? false : 'a read beside an open transaction needs PostgreSQL',
  }, async () => {
    const { app, a } = await setup()
    const db = app.app.services.db
    const review = await createReview(app, a, 'council')
    const id = review.review_id
    assert.equal((await postVerdict(app, a, id, verdict('c1', 'DONE'))).statusCode, 201)
    const before = (await queryOne(db, reviewWithVersion(id))).row_version
    // Another client holds the review row and moves it to revision 1. A verdict for revision 0 reads the review
    // meanwhile (revision 0: accepted by the rules) and waits on the row lock in its guarded write; once the
    // other commits, it must write nothing, and judged again under the lock it is stale.
    const holder = new pg.Client({ connectionString: app.db.connectionString })
    await holder.connect()
    try {
      await holder.query('BEGIN')
      await holder.query('UPDATE reviews SET revision = 1 WHERE id = $1', [id])
      const pending = postVerdict(app, a, id, verdict('c2', 'DONE'))
      // The guarded write opened review_verdicts to insert and waits for the other transaction to end.
      await waitFor(async () => {
        const { rows } = await holder.query(
          `SELECT 1 FROM pg_locks waiting JOIN pg_locks opened ON opened.pid = waiting.pid
           WHERE NOT waiting.granted AND waiting.locktype = 'transactionid'
             AND opened.granted AND opened.relation = 'review_verdicts'::regclass AND opened.mode = 'RowExclusiveLock'`,
        )
        return rows.length > 0
      }, 'the verdict waiting on the row lock in its guarded write')
      await holder.query('COMMIT')
      const answered = await pending
      assert.equal(answered.statusCode, 409, answered.body)
      assert.equal(answered.json().revision, 1)
    } finally {
      await holder.end()
    }
    const { rows } = await db.query<{ judge_id: string }>(
      'SELECT judge_id FROM review_verdicts WHERE review_id = $1 ORDER BY judge_id',
      [id],
    )
    assert.deepEqual(
      rows.map((r) => r.judge_id),
      ['c1'],
    )
    // Written at the version read before the change: nothing.
    const late = verdictInsert({
      id: randomUUID(),
      review_id: id,
      revision: 1,
      judge_id: 'c3',
      attempt: 1,
      status: 'DONE',
      body: verdict('c3', 'DONE', 1) as unknown as VerdictRow['body'],
      verdict_digest: hashJson(verdict('c3', 'DONE', 1) as unknown as JsonValue),
      received_at: new Date(),
      api_key_id: null,
    })
    assert.equal(await queryFirst(db, verdictInsertIf(id, before, [late])), undefined)
  })
})

describe('the status report of verdicts', () => {
  const judged = { judge_id: 'solo', revision: 0 }
  const cases: [string, Record<string, unknown>][] = [
    ['no status', { summary: 's', evidence: [1] }],
    ['an unknown status', { status: 'FINE', summary: 's' }],
    ['DONE without evidence', { status: 'DONE', summary: 's' }],
    ['DONE with empty evidence', { status: 'DONE', summary: 's', evidence: [] }],
    ['DONE with a blocking_reason', { status: 'DONE', summary: 's', evidence: [1], blocking_reason: 'x' }],
    ['DONE_WITH_CONCERNS without concerns', { status: 'DONE_WITH_CONCERNS', summary: 's', evidence: [1] }],
    [
      'DONE_WITH_CONCERNS with a blank concern',
      { status: 'DONE_WITH_CONCERNS', summary: 's', evidence: [1], concerns: [' '] },
    ],
    ['NEEDS_CONTEXT without a question', { status: 'NEEDS_CONTEXT', summary: 's' }],
    [
      'NEEDS_CONTEXT with evidence: null',
      { status: 'NEEDS_CONTEXT', summary: 's', blocking_question: 'q', evidence: null },
    ],
    ['BLOCKED with concerns', { status: 'BLOCKED', summary: 's', blocking_reason: 'r', concerns: ['c'] }],
    ['BLOCKED with a blank reason', { status: 'BLOCKED', summary: 's', blocking_reason: '   ' }],
    ['a blank summary', { status: 'BLOCKED', summary: ' \n', blocking_reason: 'r' }],
    ['a 4,001-character summary', { status: 'BLOCKED', summary: 'x'.repeat(4001), blocking_reason: 'r' }],
    [
      '51 concerns',
      { status: 'DONE_WITH_CONCERNS', summary: 's', evidence: [1], concerns: Array(51).fill('c') },
    ],
    ['an unknown key', { status: 'DONE', summary: 's', evidence: [1], verdict: 'ok' }],
  ]
  for (const [name, envelope] of cases) {
    it(`answers ${name} with the 400 a fan-out result gets, and stores nothing`, async () => {
      const { app, a } = await setup()
      const review = await createReview(app, a, 'do_and_judge')
      const response = await postVerdict(app, a, review.review_id, { ...judged, ...envelope })
      assert.equal(response.statusCode, 400, response.body)
      // The same envelope as a fan-out result: the same errors, from the same schema factory.
      assert.deepEqual(
        response.json().errors,
        bodyErrors(fanoutResultBody, { subtask_id: 'st_1', ...envelope }),
      )
      assert.deepEqual((await getReview(app, a, review.review_id)).verdicts, [])
    })
  }

  it('refuses claims and worker, which belong to fan-out results only', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'do_and_judge')
    for (const extra of [{ claims: [] }, { worker: { model: 'm' } }]) {
      const response = await postVerdict(app, a, review.review_id, verdict('solo', 'DONE', 0, extra))
      assert.equal(response.statusCode, 400, response.body)
      assert.deepEqual(response.json().errors, [
        { path: `body/${Object.keys(extra)[0]}`, message: 'unknown field' },
      ])
    }
  })

  it('requires judge_id and a non-negative integer revision', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'do_and_judge')
    const { judge_id: _judge, revision: _revision, ...envelope } = verdict('solo', 'DONE')
    const missing = await postVerdict(app, a, review.review_id, envelope)
    assert.deepEqual(missing.json().errors, [
      { path: 'body/judge_id', message: 'required' },
      { path: 'body/revision', message: 'required' },
    ])
    for (const revision of [-1, 0.5, '0', null]) {
      const response = await postVerdict(app, a, review.review_id, {
        ...envelope,
        judge_id: 'solo',
        revision,
      })
      assert.equal(response.statusCode, 400, `revision ${JSON.stringify(revision)}`)
      assert.equal(response.json().errors[0].path, 'body/revision')
    }
  })

  it('validates council findings: severity, title, location lengths (their count is a limit: 422)', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'council')
    const finding = { severity: 'high', title: 'Race in cache' }
    const cases: [unknown, string][] = [
      [[{ ...finding, severity: 'blocker' }], 'body/findings/0/severity'],
      [[{ ...finding, title: '  ' }], 'body/findings/0/title'],
      [[{ ...finding, title: 'x'.repeat(301) }], 'body/findings/0/title'],
      [[{ ...finding, location: 'x'.repeat(501) }], 'body/findings/0/location'],
      [[{ ...finding, confidence: 1 }], 'body/findings/0/confidence'],
    ]
    for (const [findings, path] of cases) {
      const response = await postVerdict(app, a, review.review_id, verdict('c1', 'DONE', 0, { findings }))
      assert.equal(response.statusCode, 400, response.body)
      assert.equal(response.json().errors[0].path, path)
    }
    const over = await postVerdict(
      app,
      a,
      review.review_id,
      verdict('c1', 'DONE', 0, { findings: Array(201).fill(finding) }),
    )
    assert.equal(over.statusCode, 422, over.body)
    assert.equal(over.json().limit, 'findings_per_verdict')
    const ok = await postVerdict(
      app,
      a,
      review.review_id,
      verdict('c1', 'NEEDS_CONTEXT', 0, {
        findings: [{ ...finding, location: null, lens: 'security', detail: null }],
      }),
    )
    assert.equal(ok.statusCode, 201, 'findings go with any status in a council')
  })
})
