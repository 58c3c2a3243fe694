import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { clientHash, signedPart } from '../helpers/fixtures.ts'
import {
  assertSignedEnvelope,
  createReview,
  decide,
  getReview,
  judge,
  postDecide,
  postVerdict,
  sharedReviewApp,
  verdict,
} from '../helpers/review-fixtures.ts'

/**
 * Each mode end to end over HTTP: create the review, record the judges' verdicts, decide, and read the signed
 * review manifest. The routing tables themselves are the domain's (test/domain/review/decide.test.ts); these
 * tests hold the service to them through every layer.
 */
const setup = sharedReviewApp()

const MANIFEST_FIELDS = [
  'blocking_question',
  'blocking_reason',
  'concerns',
  'directive',
  'divergence',
  'findings',
  'implementer',
  'issued_at',
  'judges',
  'kind',
  'manifest_id',
  'mode',
  'orchestrator_id',
  'review_id',
  'review_key',
  'revision',
  'subject',
  'supersedes',
  'verdict',
  'verdicts',
]

describe('do_and_judge', () => {
  it('waits for its one judge, then signs a manifest with exactly the review manifest fields', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'do_and_judge')
    const pending = await postDecide(app, a, review.review_id)
    assert.equal(pending.statusCode, 202, pending.body)
    assert.deepEqual(pending.json(), { status: 'pending', missing_judges: ['solo'] })

    const recorded = await judge(app, a, review.review_id, verdict('solo', 'DONE'))
    assert.deepEqual(Object.keys(recorded).sort(), [
      'judge_id',
      'received_at',
      'review_id',
      'revision',
      'status',
      'verdict_digest',
    ])
    assert.equal(recorded.verdict_digest, clientHash(verdict('solo', 'DONE')))

    const envelope = await decide(app, a, review.review_id)
    await assertSignedEnvelope(app, envelope)
    const m = envelope.manifest
    assert.deepEqual(Object.keys(m).sort(), MANIFEST_FIELDS)
    assert.equal(m.kind, 'review')
    assert.equal(m.review_id, review.review_id)
    assert.equal(m.revision, 0)
    assert.deepEqual(m.subject, review.subject)
    assert.deepEqual(m.judges, [
      { judge_id: 'solo', model: 'model-m', context_id: 'ctx-9', stage: null, role: null },
    ])
    assert.equal(m.verdict, 'DONE')
    assert.equal(m.directive, 'APPLY')
    assert.deepEqual(m.verdicts, [
      {
        judge_id: 'solo',
        model: 'model-m',
        stage: null,
        role: null,
        status: 'DONE',
        summary: 'solo: DONE',
        concerns: [],
        blocking_question: null,
        blocking_reason: null,
        verdict_digest: recorded.verdict_digest,
      },
    ])
    assert.deepEqual(m.concerns, [])
    assert.deepEqual(m.findings, [])
    assert.equal(m.divergence, null)
    assert.equal(m.supersedes, null)

    const after = await getReview(app, a, review.review_id)
    assert.equal(after.status, 'decided')
    assert.equal(after.manifest_id, m.manifest_id)
    assert.deepEqual(after.verdicts, m.verdicts)
    // Decided once: deciding again returns the same signed bytes.
    const again = await decide(app, a, review.review_id)
    assert.deepEqual(signedPart(again), signedPart(envelope))
  })

  const table = [
    ['DONE_WITH_CONCERNS', 'DONE_WITH_CONCERNS', 'APPLY', 'decided'],
    ['NEEDS_CONTEXT', 'NEEDS_CONTEXT', 'PAUSE', 'open'],
    ['BLOCKED', 'BLOCKED', 'REVISE', 'open'],
  ] as const
  for (const [status, expectedVerdict, directive, reviewStatus] of table) {
    it(`routes a ${status} verdict to ${directive}`, async () => {
      const { app, a } = await setup()
      const review = await createReview(app, a, 'do_and_judge')
      await judge(app, a, review.review_id, verdict('solo', status))
      const { manifest: m } = await decide(app, a, review.review_id)
      assert.equal(m.verdict, expectedVerdict)
      assert.equal(m.directive, directive)
      assert.deepEqual(
        m.concerns,
        status === 'DONE_WITH_CONCERNS' ? [{ judge_id: 'solo', concern: 'solo concern' }] : [],
      )
      assert.equal(m.blocking_question, status === 'NEEDS_CONTEXT' ? 'solo asks: which currency?' : null)
      assert.equal(
        m.blocking_reason,
        status === 'BLOCKED' ? 'solo blocks: the refund is retried twice' : null,
      )
      assert.equal((await getReview(app, a, review.review_id)).status, reviewStatus)
    })
  }
})

describe('two_stage', () => {
  it('waits for stage 1 alone, refuses stage 2 before it, then needs both and carries every concern forward', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'two_stage')
    assert.deepEqual((await postDecide(app, a, review.review_id)).json(), {
      status: 'pending',
      missing_judges: ['spec'],
    })
    const early = await postVerdict(app, a, review.review_id, verdict('quality', 'DONE'))
    assert.equal(early.statusCode, 409, early.body)
    assert.match(early.json().detail, /stage 1/)
    assert.equal(early.json().manifest_id, null)

    await judge(app, a, review.review_id, verdict('spec', 'DONE_WITH_CONCERNS'))
    assert.deepEqual((await postDecide(app, a, review.review_id)).json(), {
      status: 'pending',
      missing_judges: ['quality'],
    })
    await judge(
      app,
      a,
      review.review_id,
      verdict('quality', 'DONE_WITH_CONCERNS', 0, { concerns: ['rename retryOnce', 'split the handler'] }),
    )
    const { manifest: m } = await decide(app, a, review.review_id)
    assert.equal(m.verdict, 'DONE_WITH_CONCERNS')
    assert.equal(m.directive, 'APPLY')
    assert.deepEqual(m.concerns, [
      { judge_id: 'quality', concern: 'rename retryOnce' },
      { judge_id: 'quality', concern: 'split the handler' },
      { judge_id: 'spec', concern: 'spec concern' },
    ])
    assert.deepEqual(
      m.verdicts.map((v) => [v.judge_id, v.stage, v.role]),
      [
        ['quality', 2, null],
        ['spec', 1, null],
      ],
    )
  })

  it('lets the stricter stage win, with the blocking reason of the deciding verdict', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'two_stage')
    await judge(app, a, review.review_id, verdict('spec', 'DONE'))
    await judge(app, a, review.review_id, verdict('quality', 'BLOCKED'))
    const { manifest: m } = await decide(app, a, review.review_id)
    assert.equal(m.verdict, 'BLOCKED')
    assert.equal(m.directive, 'REVISE')
    assert.equal(m.blocking_reason, 'quality blocks: the refund is retried twice')
  })

  for (const stageOne of ['BLOCKED', 'NEEDS_CONTEXT'] as const) {
    it(`decides a stage-1 ${stageOne} at once and refuses stage 2, before and after the decision`, async () => {
      const { app, a } = await setup()
      const review = await createReview(app, a, 'two_stage')
      await judge(app, a, review.review_id, verdict('spec', stageOne))
      const before = await postVerdict(app, a, review.review_id, verdict('quality', 'DONE'))
      assert.equal(before.statusCode, 409, before.body)
      assert.match(before.json().detail, new RegExp(`stage 1 returned ${stageOne}`))

      const { manifest: m } = await decide(app, a, review.review_id)
      assert.equal(m.verdict, stageOne)
      assert.equal(m.directive, stageOne === 'BLOCKED' ? 'REVISE' : 'PAUSE')
      assert.deepEqual(
        m.verdicts.map((v) => v.judge_id),
        ['spec'],
      )
      const after = await postVerdict(app, a, review.review_id, verdict('quality', 'DONE'))
      assert.equal(after.statusCode, 409, after.body)
      // After a REVISE the revision is over; after a PAUSE stage 2 still does not run. Both name the manifest.
      assert.equal(after.json().manifest_id, m.manifest_id)
      // Nothing of stage 2 was stored.
      assert.deepEqual(
        (await getReview(app, a, review.review_id)).verdicts.map((v) => v.judge_id),
        ['spec'],
      )
    })
  }
})

describe('debate', () => {
  it('needs both judges, never waits for the meta-judge, and reports a divergence when they differ', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'debate')
    await judge(app, a, review.review_id, verdict('zed', 'BLOCKED'))
    assert.deepEqual((await postDecide(app, a, review.review_id)).json(), {
      status: 'pending',
      missing_judges: ['amy'],
    })
    await judge(app, a, review.review_id, verdict('amy', 'DONE'))
    const { manifest: m } = await decide(app, a, review.review_id)
    assert.equal(m.verdict, 'BLOCKED')
    assert.equal(m.directive, 'REVISE')
    assert.equal(m.blocking_reason, 'zed blocks: the refund is retried twice')
    assert.deepEqual(m.divergence, { a: 'amy', b: 'zed', a_status: 'DONE', b_status: 'BLOCKED' })
    assert.deepEqual(
      m.verdicts.map((v) => [v.judge_id, v.role, v.stage]),
      [
        ['amy', 'judge', null],
        ['zed', 'judge', null],
      ],
    )
    // The meta-judge cannot reopen a decided revision.
    const meta = await postVerdict(app, a, review.review_id, verdict('moderator', 'DONE'))
    assert.equal(meta.statusCode, 409, meta.body)
    assert.equal(meta.json().manifest_id, m.manifest_id)
  })

  it('lets a meta-judge make the result stricter, never looser, outside the divergence', async () => {
    const { app, a } = await setup()
    const tightened = await createReview(app, a, 'debate')
    await judge(app, a, tightened.review_id, verdict('amy', 'DONE'))
    await judge(app, a, tightened.review_id, verdict('zed', 'DONE'))
    await judge(app, a, tightened.review_id, verdict('moderator', 'NEEDS_CONTEXT'))
    const { manifest: strict } = await decide(app, a, tightened.review_id)
    assert.equal(strict.verdict, 'NEEDS_CONTEXT')
    assert.equal(strict.directive, 'PAUSE')
    assert.equal(strict.blocking_question, 'moderator asks: which currency?')
    assert.equal(strict.divergence, null)
    assert.deepEqual(
      strict.verdicts.map((v) => [v.judge_id, v.role]),
      [
        ['amy', 'judge'],
        ['moderator', 'meta'],
        ['zed', 'judge'],
      ],
    )

    const loosened = await createReview(app, a, 'debate')
    await judge(app, a, loosened.review_id, verdict('moderator', 'DONE'))
    await judge(app, a, loosened.review_id, verdict('zed', 'DONE'))
    await judge(app, a, loosened.review_id, verdict('amy', 'DONE_WITH_CONCERNS'))
    const { manifest: kept } = await decide(app, a, loosened.review_id)
    assert.equal(kept.verdict, 'DONE_WITH_CONCERNS')
    assert.equal(kept.directive, 'APPLY')
    assert.deepEqual(kept.divergence, {
      a: 'amy',
      b: 'zed',
      a_status: 'DONE_WITH_CONCERNS',
      b_status: 'DONE',
    })
  })
})

describe('council', () => {
  it('merges a designed set of findings reported in different spellings, and only advises', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'council')
    await judge(
      app,
      a,
      review.review_id,
      verdict('c1', 'DONE', 0, {
        findings: [
          { severity: 'medium', title: 'Race in cache', location: 'cache.ts', lens: 'concurrency' },
          { severity: 'high', title: 'SQL injection in /login', location: 'auth/login.ts' },
        ],
      }),
    )
    assert.deepEqual((await postDecide(app, a, review.review_id)).json(), {
      status: 'pending',
      missing_judges: ['c2', 'c3'],
    })
    await judge(
      app,
      a,
      review.review_id,
      verdict('c2', 'DONE_WITH_CONCERNS', 0, {
        findings: [
          { severity: 'critical', title: '  race \t in  CACHE ', location: ' cache.ts' },
          {
            severity: 'low',
            title: 'race in cache',
            location: 'CACHE.TS',
            detail: 'reported twice: counts once',
          },
          { severity: 'medium', title: 'sql injection in /LOGIN', location: 'AUTH/login.ts' },
          { severity: 'low', title: 'Typo', location: '' },
        ],
      }),
    )
    // A BLOCKED council judge gates nothing: the council only advises.
    await judge(
      app,
      a,
      review.review_id,
      verdict('c3', 'BLOCKED', 0, { findings: [{ severity: 'low', title: 'typo', location: null }] }),
    )
    const envelope = await decide(app, a, review.review_id)
    await assertSignedEnvelope(app, envelope)
    const m = envelope.manifest
    assert.equal(m.verdict, 'ADVISORY')
    assert.equal(m.directive, 'ADVISORY')
    assert.equal(m.blocking_question, null)
    assert.equal(m.blocking_reason, null)
    assert.equal(m.divergence, null)
    const fingerprint = (title: string, location: string | null) => clientHash({ title, location })
    assert.deepEqual(m.findings, [
      {
        fingerprint: fingerprint('race in cache', 'cache.ts'),
        severity: 'critical',
        title: 'race in cache',
        location: 'cache.ts',
        reported_by: ['c1', 'c2'],
        models: ['Model-B', 'model-a'],
        confidence: 2 / 3,
      },
      {
        fingerprint: fingerprint('sql injection in /login', 'auth/login.ts'),
        severity: 'high',
        title: 'sql injection in /login',
        location: 'auth/login.ts',
        reported_by: ['c1', 'c2'],
        models: ['Model-B', 'model-a'],
        confidence: 2 / 3,
      },
      {
        fingerprint: fingerprint('typo', null),
        severity: 'low',
        title: 'typo',
        location: null,
        reported_by: ['c2', 'c3'],
        models: ['Model-B', 'model-c'],
        confidence: 2 / 3,
      },
    ])
    assert.match(envelope.manifest_digest, /^sha256:/)
    assert.ok(JSON.stringify(m).includes('"confidence":0.6666666666666666'), 'the plain quotient as a number')
    assert.equal((await getReview(app, a, review.review_id)).status, 'decided')
  })

  it('refuses findings on a verdict outside a council with a 400 at body/findings', async () => {
    const { app, a } = await setup()
    const review = await createReview(app, a, 'do_and_judge')
    for (const findings of [[], [{ severity: 'low', title: 'x' }]]) {
      const response = await postVerdict(app, a, review.review_id, verdict('solo', 'DONE', 0, { findings }))
      assert.equal(response.statusCode, 400, response.body)
      assert.deepEqual(response.json().errors, [
        { path: 'body/findings', message: 'allowed only in council reviews' },
      ])
    }
    const nullFindings = await postVerdict(
      app,
      a,
      review.review_id,
      verdict('solo', 'DONE', 0, { findings: null }),
    )
    assert.equal(nullFindings.statusCode, 400, nullFindings.body)
    assert.deepEqual((await getReview(app, a, review.review_id)).verdicts, [])
  })
})

describe('arrival order', () => {
  const permutations = <T>(items: T[]): T[][] =>
    items.length <= 1
      ? [items]
      : items.flatMap((item, i) =>
          permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
        )
  /** The manifest's content: what a decision says, without the ids and times of its own review. */
  const decisionOf = (m: Record<string, unknown>) => {
    const { manifest_id: _m, review_id: _r, review_key: _k, issued_at: _i, ...rest } = m
    return rest
  }
  const sets: [string, 'debate' | 'council', Record<string, unknown>[]][] = [
    [
      'debate with a meta-judge',
      'debate',
      [
        verdict('amy', 'DONE_WITH_CONCERNS'),
        verdict('zed', 'DONE'),
        verdict('moderator', 'DONE_WITH_CONCERNS', 0, { concerns: ['log the retry'] }),
      ],
    ],
    [
      'council',
      'council',
      [
        verdict('c1', 'DONE', 0, { findings: [{ severity: 'low', title: 'Typo', location: 'a.ts' }] }),
        verdict('c2', 'BLOCKED', 0, { findings: [{ severity: 'high', title: ' typo', location: 'A.ts' }] }),
        verdict('c3', 'DONE_WITH_CONCERNS', 0, { findings: [{ severity: 'medium', title: 'Leak' }] }),
      ],
    ],
  ]
  for (const [name, mode, verdicts] of sets) {
    it(`signs the same decision for every order the verdicts of a ${name} arrive in`, async () => {
      const { app, a } = await setup()
      const decisions = []
      for (const order of permutations(verdicts)) {
        const review = await createReview(app, a, mode)
        for (const body of order) await judge(app, a, review.review_id, body)
        decisions.push(decisionOf((await decide(app, a, review.review_id)).manifest))
      }
      assert.equal(decisions.length, 6)
      for (const other of decisions.slice(1)) assert.deepEqual(other, decisions[0])
    })
  }
})
