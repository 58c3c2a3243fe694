import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import canonicalize from 'canonicalize'
import {
  CREATE_REVIEW_EXAMPLES,
  REVIEW_MANIFEST_EXAMPLES,
  reviewManifestSchema,
} from '../../src/cases/review/schemas.ts'
import { signedPart } from '../helpers/fixtures.ts'
import {
  createReview,
  DIGEST_0,
  decide,
  getReview,
  IMPLEMENTER,
  judge,
  PANELS,
  postVerdict,
  reviewBody,
  sharedReviewApp,
  uniqueReviewKey,
  verdict,
} from '../helpers/review-fixtures.ts'

/**
 * Creating, reading and auditing reviews over HTTP: the natural key, the panel rules and the iron law at
 * creation, the order in which checks answer, lists and the review's story. Modes end to end are in
 * reviews-modes.test.ts, revisions and verdict state in reviews-revisions.test.ts.
 */
const setup = sharedReviewApp()

const IRON_LAW = 'urn:arbiter:problem:judge-not-independent'
const UNPROCESSABLE = 'urn:arbiter:problem:unprocessable'

async function create(body: unknown, key?: string) {
  const { app, a } = await setup()
  return app.request(key ?? a, { method: 'POST', url: '/v1/reviews', payload: body as object })
}

describe('POST /v1/reviews', () => {
  it('creates the review in the shape GET returns: judges as submitted with absent stage/role null', async () => {
    const { app, a } = await setup()
    const body = reviewBody('two_stage', { subject: { digest: DIGEST_0 } })
    const response = await create(body)
    assert.equal(response.statusCode, 201, response.body)
    const review = response.json()
    assert.deepEqual(Object.keys(review).sort(), [
      'created_at',
      'implementer',
      'judges',
      'manifest_id',
      'mode',
      'orchestrator_id',
      'review_id',
      'review_key',
      'revision',
      'status',
      'subject',
      'verdicts',
    ])
    assert.equal(review.orchestrator_id, 'orch-a')
    assert.equal(review.review_key, body.review_key)
    assert.equal(review.mode, 'two_stage')
    assert.deepEqual(review.subject, { digest: DIGEST_0, description: null, uri: null })
    assert.deepEqual(review.implementer, IMPLEMENTER)
    assert.deepEqual(review.judges, [
      { judge_id: 'spec', model: 'model-l', context_id: 'ctx-2', stage: 1, role: null },
      { judge_id: 'quality', model: 'model-l', context_id: 'ctx-3', stage: 2, role: null },
    ])
    assert.equal(review.revision, 0)
    assert.equal(review.status, 'open')
    assert.deepEqual(review.verdicts, [])
    assert.equal(review.manifest_id, null)

    const read = await app.request(a, { method: 'GET', url: `/v1/reviews/${review.review_id}` })
    assert.deepEqual(read.json(), review)
  })

  it('answers the same body again (JCS-equal, any key order) with 200 and another body under the key with 409', async () => {
    const body = reviewBody('do_and_judge')
    const first = await create(body)
    assert.equal(first.statusCode, 201, first.body)
    const reordered = JSON.parse(canonicalize(body)!) as Record<string, unknown>
    const reversed = Object.fromEntries(Object.entries(reordered).reverse())
    const again = await create(reversed)
    assert.equal(again.statusCode, 200, again.body)
    assert.deepEqual(again.json(), first.json())

    const different = await create({ ...body, subject: { digest: DIGEST_0, description: 'other' } })
    assert.equal(different.statusCode, 409, different.body)
    assert.equal(different.json().review_id, first.json().review_id)
    // The panel is judged before the key: a broken panel is a 422 even under a taken key.
    const broken = await create({ ...body, judges: [...PANELS.do_and_judge, ...PANELS.do_and_judge] })
    assert.equal(broken.statusCode, 422, broken.body)
  })

  it('lets another orchestrator create under the same review_key (the key is per orchestrator)', async () => {
    const { b } = await setup()
    const body = reviewBody('do_and_judge')
    assert.equal((await create(body)).statusCode, 201)
    assert.equal((await create({ ...body, orchestrator_id: 'orch-b' }, b)).statusCode, 201)
  })
})

describe('the iron law at creation', () => {
  const variants: [string, { model: string; context_id: string }][] = [
    ['exactly the implementer', { model: 'model-m', context_id: 'ctx-1' }],
    ['upper case', { model: 'MODEL-M', context_id: 'CTX-1' }],
    ['surrounding white space', { model: '  model-m ', context_id: '\tctx-1\n' }],
    ['both', { model: ' Model-M', context_id: 'Ctx-1 ' }],
  ]
  const placements: [string, string, (same: Record<string, string>) => Record<string, unknown>[], number][] =
    [
      ['the do_and_judge judge', 'do_and_judge', (same) => [{ judge_id: 'solo', ...same }], 0],
      [
        'the stage-2 judge',
        'two_stage',
        (same) => [PANELS.two_stage[0]!, { judge_id: 'quality', ...same, stage: 2 }],
        1,
      ],
      [
        'a debate judge',
        'debate',
        (same) => [{ judge_id: 'amy', ...same, role: 'judge' }, ...PANELS.debate.slice(1)],
        0,
      ],
      [
        'the debate meta-judge',
        'debate',
        (same) => [...PANELS.debate.slice(0, 2), { judge_id: 'moderator', ...same, role: 'meta' }],
        2,
      ],
      [
        'a council judge',
        'council',
        (same) => [...PANELS.council.slice(0, 2), { judge_id: 'c3', ...same }],
        2,
      ],
    ]
  for (const [place, mode, judges, index] of placements) {
    it(`refuses ${place} on the implementer's model and context, in every spelling`, async () => {
      for (const [spelling, same] of variants) {
        const response = await create(reviewBody(mode as 'debate', { judges: judges(same) }))
        assert.equal(response.statusCode, 422, `${spelling}: ${response.body}`)
        const problem = response.json()
        assert.equal(problem.type, IRON_LAW, spelling)
        assert.match(String(response.headers['content-type']), /application\/problem\+json/)
        const judgeId = (judges(same)[index] as { judge_id: string }).judge_id
        assert.deepEqual(
          problem.errors.map((e: { path: string }) => e.path),
          [`/judges/${index}`],
          spelling,
        )
        assert.match(problem.errors[0].message, /iron law/)
        assert.ok(problem.errors[0].message.includes(JSON.stringify(judgeId)), problem.errors[0].message)
        assert.match(problem.detail, /iron law/)
      }
    })
  }

  it("accepts the implementer's model on a fresh context, and another model on the implementer's context", async () => {
    const fresh = await create(
      reviewBody('do_and_judge', { judges: [{ judge_id: 'solo', model: ' MODEL-M ', context_id: 'ctx-2' }] }),
    )
    assert.equal(fresh.statusCode, 201, fresh.body)
    const otherModel = await create(
      reviewBody('do_and_judge', { judges: [{ judge_id: 'solo', model: 'model-x', context_id: 'CTX-1' }] }),
    )
    assert.equal(otherModel.statusCode, 201, otherModel.body)
  })

  it('reports every violation, with the iron-law type when the iron law is among them', async () => {
    const response = await create(
      reviewBody('two_stage', {
        judges: [
          { judge_id: 'spec', model: 'model-m', context_id: 'ctx-1', stage: 1, role: 'judge' },
          { judge_id: 'spec', model: 'model-l', context_id: 'ctx-3', stage: 1 },
          { judge_id: 'third', model: 'model-l', context_id: 'CTX-3' },
        ],
      }),
    )
    assert.equal(response.statusCode, 422, response.body)
    const problem = response.json()
    assert.equal(problem.type, IRON_LAW)
    const rules = problem.errors.map((e: { path: string; message: string }) => [
      e.path,
      e.message.split(':')[0],
    ])
    assert.deepEqual(rules, [
      ['/judges/0', 'role only in debate'],
      ['/judges/0', 'iron law'],
      ['/judges/1', 'one judge per stage'],
      ['/judges/1', 'unique judge_id'],
      ['/judges/2', 'judge count'],
      ['/judges/2', 'stage required'],
      ['/judges/2', 'fresh context per judge'],
    ])
  })
})

describe('panel rules at creation', () => {
  const judge = (judge_id: string, model: string, extra: Record<string, unknown> = {}) => ({
    judge_id,
    model,
    context_id: `ctx-${judge_id}`,
    ...extra,
  })
  const table: [string, string, Record<string, unknown>[], [string, string][]][] = [
    [
      'do_and_judge with two judges',
      'do_and_judge',
      [judge('a', 'm1'), judge('b', 'm2')],
      [['/judges/1', 'judge count']],
    ],
    [
      'two_stage with one judge',
      'two_stage',
      [judge('a', 'm1', { stage: 1 })],
      [['/judges/1', 'judge count']],
    ],
    [
      'two_stage with three judges',
      'two_stage',
      [judge('a', 'm1', { stage: 1 }), judge('b', 'm1', { stage: 2 }), judge('c', 'm1', { stage: 2 })],
      [
        ['/judges/2', 'judge count'],
        ['/judges/2', 'one judge per stage'],
      ],
    ],
    [
      'two_stage with a judge without a stage',
      'two_stage',
      [judge('a', 'm1', { stage: 1 }), judge('b', 'm1', { stage: null })],
      [['/judges/1', 'stage required']],
    ],
    [
      'a null stage outside two_stage',
      'do_and_judge',
      [judge('a', 'm1', { stage: null })],
      [['/judges/0', 'stage only in two_stage']],
    ],
    [
      'a role outside debate',
      'council',
      [judge('a', 'm1'), judge('b', 'm2', { role: 'judge' })],
      [['/judges/1', 'role only in debate']],
    ],
    [
      'debate with one judge',
      'debate',
      [judge('a', 'm1', { role: 'judge' })],
      [['/judges/1', 'debate judge count']],
    ],
    [
      'debate with three judges of role judge',
      'debate',
      [
        judge('a', 'm1', { role: 'judge' }),
        judge('b', 'm1', { role: 'judge' }),
        judge('c', 'm1', { role: 'judge' }),
      ],
      [['/judges/2', 'debate judge count']],
    ],
    [
      'debate with two meta-judges',
      'debate',
      [
        judge('a', 'm1', { role: 'judge' }),
        judge('b', 'm1', { role: 'judge' }),
        judge('c', 'm1', { role: 'meta' }),
        judge('d', 'm1', { role: 'meta' }),
      ],
      [['/judges/3', 'at most one meta-judge']],
    ],
    [
      'a debate judge without a role',
      'debate',
      [judge('a', 'm1', { role: 'judge' }), judge('b', 'm1', { role: 'judge' }), judge('c', 'm1')],
      [['/judges/2', 'role required']],
    ],
    ['council with one judge', 'council', [judge('a', 'm1')], [['/judges/1', 'judge count']]],
    [
      'council judges on one model, spelled differently',
      'council',
      [judge('a', 'model-a'), judge('b', ' MODEL-A ')],
      [['/judges/1', 'distinct council models']],
    ],
    [
      'two judges on one model and context',
      'two_stage',
      [
        { judge_id: 'a', model: 'm1', context_id: 'ctx-9', stage: 1 },
        { judge_id: 'b', model: 'M1', context_id: ' ctx-9', stage: 2 },
      ],
      [['/judges/1', 'fresh context per judge']],
    ],
    [
      'a judge_id used twice',
      'do_and_judge',
      [judge('a', 'm1'), judge('a', 'm2')],
      [
        ['/judges/1', 'judge count'],
        ['/judges/1', 'unique judge_id'],
      ],
    ],
  ]
  for (const [name, mode, judges, expected] of table) {
    it(`refuses ${name} with a 422 naming the rule and the judge`, async () => {
      const response = await create(reviewBody(mode as 'council', { judges }))
      assert.equal(response.statusCode, 422, response.body)
      const problem = response.json()
      assert.equal(problem.type, UNPROCESSABLE)
      assert.deepEqual(
        problem.errors.map((e: { path: string; message: string }) => [e.path, e.message.split(':')[0]]),
        expected,
      )
    })
  }

  it('accepts every panel size a mode allows', async () => {
    const council = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        judge_id: `c${i}`,
        model: `model-${i}`,
        context_id: `ctx-${i}`,
      }))
    for (const [mode, judges] of [
      ['council', council(2)],
      ['council', council(10)],
      ['debate', PANELS.debate.slice(0, 2)],
      ['debate', PANELS.debate],
    ] as const) {
      const response = await create(reviewBody(mode, { judges }))
      assert.equal(response.statusCode, 201, `${mode} × ${judges.length}: ${response.body}`)
    }
    // A panel's size is a panel rule: a 422 naming it, like every other count.
    const eleven = await create(reviewBody('council', { judges: council(11) }))
    assert.equal(eleven.statusCode, 422, eleven.body)
    assert.deepEqual(eleven.json().errors, [
      {
        path: '/judges/10',
        message: 'judge count: council takes 2 to 10 judges; 11 given (no panel takes more than 10)',
      },
    ])
    // Thousands of judges (a megabyte of them, all on one model and context) buy one violation, not thousands.
    const crowd = Array.from({ length: 20_000 }, (_, i) => ({
      judge_id: `j${i}`,
      model: 'm',
      context_id: 'c',
    }))
    for (const mode of ['council', 'debate', 'do_and_judge'] as const) {
      const response = await create(reviewBody(mode, { judges: crowd }))
      assert.equal(response.statusCode, 422, mode)
      assert.deepEqual(
        response.json().errors.map((e: { path: string }) => e.path),
        ['/judges/10'],
      )
      assert.ok(response.body.length < 2000, `${mode}: ${response.body.length} bytes`)
    }
  })
})

describe('request schema of POST /v1/reviews', () => {
  const valid = () => reviewBody('two_stage')
  const cases: [string, (body: ReturnType<typeof valid>) => unknown, string][] = [
    ['an unknown mode', (b) => ({ ...b, mode: 'jury' }), 'body/mode'],
    [
      'stage 3',
      (b) => ({ ...b, judges: [{ ...b.judges[0], stage: 3 }, b.judges[1]] }),
      'body/judges/0/stage',
    ],
    [
      'a role other than judge or meta',
      (b) => ({ ...b, judges: [{ ...b.judges[0], role: 'chair' }] }),
      'body/judges/0/role',
    ],
    [
      'an uppercase digest',
      (b) => ({ ...b, subject: { digest: DIGEST_0.toUpperCase() } }),
      'body/subject/digest',
    ],
    [
      'a digest without prefix',
      (b) => ({ ...b, subject: { digest: '0'.repeat(64) } }),
      'body/subject/digest',
    ],
    ['a review_key with a space', (b) => ({ ...b, review_key: 'PR 481' }), 'body/review_key'],
    [
      'a judge_id with a slash',
      (b) => ({ ...b, judges: [{ ...b.judges[0], judge_id: 'a/b' }] }),
      'body/judges/0/judge_id',
    ],
    [
      'a blank model',
      (b) => ({ ...b, implementer: { model: '  ', context_id: 'c' } }),
      'body/implementer/model',
    ],
    [
      'a 201-character context',
      (b) => ({ ...b, judges: [{ ...b.judges[0], context_id: 'x'.repeat(201) }] }),
      'body/judges/0/context_id',
    ],
    ['no judges', (b) => ({ ...b, judges: [] }), 'body/judges'],
    ['an unknown key at the top', (b) => ({ ...b, extra: 1 }), 'body/extra'],
    [
      'an unknown key in the subject',
      (b) => ({ ...b, subject: { digest: DIGEST_0, size: 3 } }),
      'body/subject/size',
    ],
    [
      'an unknown key in a judge',
      (b) => ({ ...b, judges: [{ ...b.judges[0], weight: 2 }] }),
      'body/judges/0/weight',
    ],
    [
      'an unknown key in the implementer',
      (b) => ({ ...b, implementer: { ...IMPLEMENTER, x: 1 } }),
      'body/implementer/x',
    ],
    ['no implementer context', (b) => ({ ...b, implementer: { model: 'm' } }), 'body/implementer/context_id'],
    ['no subject', ({ subject: _subject, ...b }) => b, 'body/subject'],
  ]
  for (const [name, change, path] of cases) {
    it(`answers ${name} with a 400 at ${path}`, async () => {
      const response = await create(change(valid()))
      assert.equal(response.statusCode, 400, response.body)
      assert.ok(
        response.json().errors.some((e: { path: string }) => e.path === path),
        JSON.stringify(response.json().errors),
      )
    })
  }
})

describe('the order checks answer in', () => {
  it('creation: 400 for the body before 403 for another orchestrator, 403 before the panel 422', async () => {
    const { b } = await setup()
    const invalid = await create({ ...reviewBody('do_and_judge'), mode: 'jury' }, b)
    assert.equal(invalid.statusCode, 400, invalid.body)
    const notOwner = await create(
      reviewBody('do_and_judge', { judges: [{ judge_id: 'x', ...IMPLEMENTER }] }),
      b,
    )
    assert.equal(notOwner.statusCode, 403, notOwner.body)
  })

  it('verdicts: 404, then 400, then 403, then 422, then 409', async () => {
    const { app, a, b } = await setup()
    const review = await createReview(app, a, 'do_and_judge')
    const unknownId = '00000000-0000-4000-8000-000000000000'
    const send = (key: string, id: string, body: unknown) =>
      postVerdict(app, key, id, body as Record<string, unknown>)
    assert.equal((await send(a, unknownId, { nonsense: true })).statusCode, 404)
    assert.equal((await send(b, unknownId, verdict('solo', 'DONE'))).statusCode, 404)
    assert.equal((await send(b, review.review_id, { nonsense: true })).statusCode, 400)
    assert.equal((await send(b, review.review_id, verdict('nobody', 'DONE', 7))).statusCode, 403)
    const unknownJudge = await send(a, review.review_id, verdict('nobody', 'DONE', 7))
    assert.equal(unknownJudge.statusCode, 422, unknownJudge.body)
    assert.deepEqual(unknownJudge.json().errors, [{ path: '/judge_id', message: 'unknown judge' }])
    // Judge ids match exactly: a judge's id in another case is another judge.
    assert.equal((await send(a, review.review_id, verdict('SOLO', 'DONE'))).statusCode, 422)
    const stale = await send(a, review.review_id, verdict('solo', 'DONE', 7))
    assert.equal(stale.statusCode, 409, stale.body)
    assert.equal(stale.json().revision, 0)
    assert.equal(stale.json().manifest_id, null)
    // A malformed path id is a 400 for the path.
    assert.equal((await send(a, 'not-a-uuid', verdict('solo', 'DONE'))).statusCode, 400)
  })

  it('revisions and decide: 404 before 400, 400 before 403', async () => {
    const { app, a, b } = await setup()
    const review = await createReview(app, a, 'do_and_judge')
    const unknownId = '00000000-0000-4000-8000-000000000000'
    for (const [url, payload] of [
      [`/v1/reviews/${unknownId}/revisions`, { subject: 'x' }],
      [`/v1/reviews/${unknownId}/decide`, { close: true }],
    ] as const) {
      assert.equal((await app.request(a, { method: 'POST', url, payload })).statusCode, 404, url)
    }
    for (const [url, payload] of [
      [`/v1/reviews/${review.review_id}/revisions`, { subject: 'x' }],
      [`/v1/reviews/${review.review_id}/decide`, { close: true }],
    ] as const) {
      assert.equal((await app.request(b, { method: 'POST', url, payload })).statusCode, 400, url)
    }
    const revision = await app.request(b, {
      method: 'POST',
      url: `/v1/reviews/${review.review_id}/revisions`,
      payload: { subject: { digest: DIGEST_0 } },
    })
    assert.equal(revision.statusCode, 403, revision.body)
    await judge(app, a, review.review_id, verdict('solo', 'DONE'))
    const decided = await app.request(b, { method: 'POST', url: `/v1/reviews/${review.review_id}/decide` })
    assert.equal(decided.statusCode, 403, decided.body)
    assert.equal(
      (await getReview(app, a, review.review_id)).manifest_id,
      null,
      'a refused decide issues nothing',
    )
    const admin = await app.request(app.adminKey, {
      method: 'POST',
      url: `/v1/reviews/${review.review_id}/decide`,
      payload: {},
    })
    assert.equal(admin.statusCode, 200, 'admin writes any review')
    assert.equal(admin.json().manifest.directive, 'APPLY')
  })
})

describe('GET /v1/reviews', () => {
  it('lists reviews oldest first, filtered by orchestrator and status, for every role', async () => {
    const { app, a, b } = await setup()
    const key = uniqueReviewKey('list')
    const first = await createReview(app, a, 'do_and_judge', { review_key: `${key}-1` })
    const second = await createReview(app, b, 'do_and_judge', {
      orchestrator_id: 'orch-b',
      review_key: `${key}-2`,
    })
    await judge(app, a, first.review_id, verdict('solo', 'DONE'))
    await decide(app, a, first.review_id)

    const dashboard = await app.key('dashboard')
    const decided = await app.request(dashboard, {
      method: 'GET',
      url: '/v1/reviews?status=decided&limit=500',
    })
    assert.equal(decided.statusCode, 200, decided.body)
    const ids = decided.json().items.map((r: { review_id: string }) => r.review_id)
    assert.ok(ids.includes(first.review_id))
    assert.ok(!ids.includes(second.review_id))
    const decidedView = decided
      .json()
      .items.find((r: { review_id: string }) => r.review_id === first.review_id)
    assert.deepEqual(
      decidedView.verdicts.map((v: { judge_id: string }) => v.judge_id),
      ['solo'],
    )

    const ofB = await app.request(a, { method: 'GET', url: '/v1/reviews?orchestrator_id=orch-b&limit=500' })
    assert.ok(ofB.json().items.every((r: { orchestrator_id: string }) => r.orchestrator_id === 'orch-b'))
    assert.ok(ofB.json().items.some((r: { review_id: string }) => r.review_id === second.review_id))

    // Pages of one, oldest first, until next_cursor is null.
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const url: string = `/v1/reviews?orchestrator_id=orch-b&limit=1${cursor ? `&cursor=${cursor}` : ''}`
      const page = (await app.request(a, { method: 'GET', url })).json()
      seen.push(...page.items.map((r: { review_id: string }) => r.review_id))
      cursor = page.next_cursor
    } while (cursor !== null)
    assert.deepEqual(
      seen,
      ofB.json().items.map((r: { review_id: string }) => r.review_id),
    )
    const bad = await app.request(a, { method: 'GET', url: '/v1/reviews?status=closed' })
    assert.equal(bad.statusCode, 400)
    assert.equal((await app.request(a, { method: 'GET', url: '/v1/reviews?cursor=%%' })).statusCode, 400)
  })

  it('answers an unknown review with 404', async () => {
    const { app, b } = await setup()
    const response = await app.request(b, {
      method: 'GET',
      url: '/v1/reviews/00000000-0000-4000-8000-000000000000',
    })
    assert.equal(response.statusCode, 404)
  })
})

describe('review manifests in the one feed, and the review story', () => {
  it('lists a review’s manifests with ?kind=review&review_id= and refuses an unknown kind', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'do_and_judge')
    await judge(app, a, review.review_id, verdict('solo', 'DONE'))
    const envelope = await decide(app, a, review.review_id)
    const listed = await app.request(a, {
      method: 'GET',
      url: `/v1/manifests?kind=review&review_id=${review.review_id}`,
    })
    assert.equal(listed.statusCode, 200, listed.body)
    assert.deepEqual(
      listed.json().items.map((e: { manifest: { manifest_id: string } }) => e.manifest.manifest_id),
      [envelope.manifest.manifest_id],
    )
    const byVerdict = await app.request(a, {
      method: 'GET',
      url: `/v1/manifests?review_id=${review.review_id}&verdict=DONE&directive=APPLY`,
    })
    assert.equal(byVerdict.json().items.length, 1)
    const outcomesOnly = await app.request(a, {
      method: 'GET',
      url: `/v1/manifests?kind=outcome&review_id=${review.review_id}`,
    })
    assert.deepEqual(outcomesOnly.json().items, [])
    assert.equal((await app.request(a, { method: 'GET', url: '/v1/manifests?kind=verdict' })).statusCode, 400)
    const one = await app.request(a, { method: 'GET', url: `/v1/manifests/${envelope.manifest.manifest_id}` })
    assert.deepEqual(signedPart(one.json()), signedPart(envelope))
  })

  it('GET /v1/audit/reviews/{id} tells the story with exactly the documented data', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'do_and_judge')
    const recorded = await judge(app, a, review.review_id, verdict('solo', 'BLOCKED'))
    const refused = await postVerdict(app, a, review.review_id, verdict('solo', 'DONE'))
    assert.equal(refused.statusCode, 409, 'a second, different verdict of the judge is refused')
    const envelope = await decide(app, a, review.review_id)
    const revised = await app.request(a, {
      method: 'POST',
      url: `/v1/reviews/${review.review_id}/revisions`,
      payload: { subject: { digest: `sha256:${'9'.repeat(64)}` } },
    })
    assert.equal(revised.statusCode, 201, revised.body)

    const ops = await app.key('ops')
    const story = await app.request(ops, { method: 'GET', url: `/v1/audit/reviews/${review.review_id}` })
    assert.equal(story.statusCode, 200, story.body)
    const body = story.json()
    assert.deepEqual(Object.keys(body).sort(), ['manifest', 'records', 'review_id', 'status'])
    assert.equal(body.review_id, review.review_id)
    assert.equal(body.status, 'open')
    assert.deepEqual(signedPart(body.manifest), signedPart(envelope))
    const records = body.records as {
      kind: string
      orchestrator_id: string
      outcome_id: null
      verdict: string | null
      manifest_id: string | null
      data: Record<string, unknown>
    }[]
    assert.deepEqual(
      records.map((r) => r.kind),
      ['review.created', 'verdict.recorded', 'manifest.issued', 'revision.recorded'],
      'refused verdicts write nothing',
    )
    assert.ok(records.every((r) => r.orchestrator_id === 'orch-a' && r.outcome_id === null))
    assert.deepEqual(records[0]!.data, { review_id: review.review_id, mode: 'do_and_judge' })
    assert.deepEqual(records[1]!.data, {
      review_id: review.review_id,
      judge_id: 'solo',
      revision: 0,
      status: 'BLOCKED',
      verdict_digest: recorded.verdict_digest,
    })
    assert.deepEqual(records[2]!.data, {
      manifest_digest: envelope.manifest_digest,
      directive: 'REVISE',
      kind: 'review',
      review_id: review.review_id,
    })
    assert.equal(records[2]!.verdict, 'BLOCKED')
    assert.equal(records[2]!.manifest_id, envelope.manifest.manifest_id)
    assert.deepEqual(records[3]!.data, {
      review_id: review.review_id,
      revision: 1,
      subject_digest: `sha256:${'9'.repeat(64)}`,
    })
    assert.equal(body.manifest.audit_seq, (records[2] as unknown as { seq: number }).seq)

    const filtered = await app.request(ops, {
      method: 'GET',
      url: `/v1/audit/records?review_id=${review.review_id}`,
    })
    assert.deepEqual(filtered.json().items, records)
    const escalations = await app.request(ops, { method: 'GET', url: '/v1/escalations?limit=500' })
    assert.deepEqual(escalations.json().items, [], 'reviews open no escalation')

    const unknown = await app.request(ops, {
      method: 'GET',
      url: '/v1/audit/reviews/00000000-0000-4000-8000-000000000000',
    })
    assert.equal(unknown.statusCode, 404)
    const empty = await createReview(app, a, 'council')
    const fresh = (
      await app.request(ops, { method: 'GET', url: `/v1/audit/reviews/${empty.review_id}` })
    ).json()
    assert.equal(fresh.manifest, null)
  })
})

describe('OpenAPI examples of reviews', () => {
  it('documents one creation body and one manifest per mode, each one the service accepts or could sign', async () => {
    const { app } = await setup()
    const document = app.app.swagger() as {
      components: { schemas: Record<string, { examples?: unknown[] }> }
    }
    const bodies = document.components.schemas.CreateReviewInput?.examples ?? []
    const manifests = document.components.schemas.ReviewManifest?.examples ?? []
    assert.deepEqual(
      bodies.map((b) => (b as { mode: string }).mode),
      ['do_and_judge', 'two_stage', 'debate', 'council'],
    )
    assert.deepEqual(
      manifests.map((m) => (m as { mode: string }).mode),
      ['do_and_judge', 'two_stage', 'debate', 'council'],
    )
    for (const example of Object.values(CREATE_REVIEW_EXAMPLES)) {
      const response = await create({ ...example, review_key: uniqueReviewKey(example.mode) })
      assert.equal(response.statusCode, 201, `${example.mode}: ${response.body}`)
    }
    for (const example of REVIEW_MANIFEST_EXAMPLES) reviewManifestSchema.parse(example)
  })
})
