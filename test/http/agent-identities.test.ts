import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createFanout, ST5_RESULT, vantageBody } from '../helpers/fanout-fixtures.ts'
import {
  createReview,
  decide,
  IMPLEMENTER,
  judge,
  PANELS,
  reviewBody,
  sharedReviewApp,
  verdict,
} from '../helpers/review-fixtures.ts'

/**
 * Models and context ids are compared as identities (docs/reviews.md, "Same model"): an invisible or look-alike
 * character can neither make a judge pass the iron law nor make one model count twice in a council. Each attack
 * below once got a 201.
 */
const setup = sharedReviewApp()

const IRON_LAW = 'urn:arbiter:problem:judge-not-independent'

/** Spellings of the implementer's model `model-m` that are refused: after NFKC they are not printable ASCII. */
const REFUSED: [string, string][] = [
  ['a trailing zero-width space', 'model-m\u200b'],
  ['a zero-width joiner', 'model\u200d-m'],
  ['a Cyrillic о', 'm\u043edel-m'],
  ['a U+2010 hyphen', 'model\u2010m'],
  ['a soft hyphen', 'model-\u00adm'],
  ['a combining accent', 'model-m\u0301'],
  ['a leading right-to-left override', '\u202emodel-m'],
]

/**
 * Judges whose spellings NFKC folds into the implementer's own identities (`model-m` on `ctx-off`): the same
 * model and context, so the iron law holds.
 */
const IMPLEMENTER_OFF = { model: 'model-m', context_id: 'ctx-off' }
const FOLDED: [string, { model: string; context_id: string }][] = [
  ['a fullwidth ｍ', { model: '\uff4dodel-m', context_id: 'ctx-off' }],
  ['the ligature ﬀ for ff', { model: 'model-m', context_id: 'ctx-o\ufb00' }],
  ['fullwidth letters and another case', { model: '\uff2dODEL-M', context_id: 'CTX-OFF' }],
]

async function create(body: unknown) {
  const { app, a } = await setup()
  return app.request(a, { method: 'POST', url: '/v1/reviews', payload: body as object })
}

describe('model and context identities in reviews', () => {
  for (const [name, model] of REFUSED) {
    it(`refuses a judge model with ${name} (400 naming the field)`, async () => {
      const response = await create(
        reviewBody('do_and_judge', { judges: [{ judge_id: 'solo', model, context_id: 'ctx-1' }] }),
      )
      assert.equal(response.statusCode, 400, response.body)
      const problem = response.json()
      assert.deepEqual(
        problem.errors.map((e: { path: string }) => e.path),
        ['body/judges/0/model'],
      )
      assert.match(problem.errors[0].message, /printable ASCII .* character \d+ is U\+[0-9A-F]{4}/)
    })
  }

  it('refuses the same characters in the implementer and in context ids', async () => {
    for (const [name, text] of REFUSED) {
      const body = reviewBody('do_and_judge', {
        implementer: { model: text, context_id: `ctx${text}` },
        judges: [{ judge_id: 'solo', model: 'model-l', context_id: `ctx-2${text}` }],
      })
      const response = await create(body)
      assert.equal(response.statusCode, 400, `${name}: ${response.body}`)
      assert.deepEqual(
        response
          .json()
          .errors.map((e: { path: string }) => e.path)
          .sort(),
        ['body/implementer/context_id', 'body/implementer/model', 'body/judges/0/context_id'],
        name,
      )
    }
  })

  for (const [name, same] of FOLDED) {
    it(`holds the iron law against ${name} (422)`, async () => {
      const response = await create(
        reviewBody('do_and_judge', { implementer: IMPLEMENTER_OFF, judges: [{ judge_id: 'solo', ...same }] }),
      )
      assert.equal(response.statusCode, 422, response.body)
      assert.equal(response.json().type, IRON_LAW)
    })
  }

  it('counts model-a, model-a + U+200B and ｍodel-a as one council model, never three', async () => {
    const council = (models: string[]) =>
      reviewBody('council', {
        judges: models.map((model, i) => ({ judge_id: `c${i}`, model, context_id: `ctx-${i + 5}` })),
      })
    const invisible = await create(council(['model-a', 'model-a\u200b', '\uff4dodel-a']))
    assert.equal(invisible.statusCode, 400, invisible.body)
    assert.deepEqual(
      invisible.json().errors.map((e: { path: string }) => e.path),
      ['body/judges/1/model'],
    )
    const lookalike = await create(council(['model-a', 'MODEL-A', '\uff4dodel-a']))
    assert.equal(lookalike.statusCode, 422, lookalike.body)
    assert.deepEqual(
      lookalike
        .json()
        .errors.map((e: { path: string; message: string }) => [e.path, e.message.split(':')[0]]),
      [
        ['/judges/1', 'distinct council models'],
        ['/judges/2', 'distinct council models'],
      ],
    )
  })

  it('keeps and returns the values as submitted, and compares them as identities in the findings', async () => {
    const { app, a } = await setup()
    const judges = [
      { judge_id: 'c1', model: '\uff4dodel-a', context_id: ' ctx-5 ' },
      { judge_id: 'c2', model: 'Model-B', context_id: 'ctx-6' },
    ]
    const review = await createReview(app, a, 'council', { judges })
    assert.deepEqual(
      review.judges,
      judges.map((j) => ({ ...j, stage: null, role: null })),
    )
    const finding = { severity: 'high', title: 'race in cache', location: 'cache.ts' }
    await judge(app, a, review.review_id, verdict('c1', 'DONE', 0, { findings: [finding] }))
    await judge(app, a, review.review_id, verdict('c2', 'DONE', 0, { findings: [finding] }))
    const { manifest } = await decide(app, a, review.review_id)
    assert.deepEqual(manifest.judges, review.judges)
    const [merged] = manifest.findings as { models: string[]; confidence: number }[]
    // Each model as its judge submitted it (compared as identities: two models, confidence 1).
    assert.deepEqual(merged!.models, ['Model-B', '\uff4dodel-a'])
    assert.equal(merged!.confidence, 1)
  })

  it('still accepts the examples: plain names on fresh contexts', async () => {
    const response = await create(
      reviewBody('two_stage', { implementer: IMPLEMENTER, judges: PANELS.two_stage }),
    )
    assert.equal(response.statusCode, 201, response.body)
  })
})

describe('model and context identities of fan-out workers', () => {
  it('refuses a worker model or context id that is not an identity (400 naming the field)', async () => {
    const { app } = await setup()
    const scout = await app.key('orchestrator', ['scout'])
    const fanout = await createFanout(app, scout, vantageBody())
    for (const [name, text] of [...REFUSED, ['an empty string', ''], ['blank', ' \u3000 ']]) {
      for (const field of ['model', 'context_id'] as const) {
        const worker = { model: 'model-x', context_id: 'ctx-5', [field]: text }
        const response = await app.request(scout, {
          method: 'POST',
          url: `/v1/fanouts/${fanout.fanout_id}/results`,
          payload: { ...ST5_RESULT, worker },
        })
        assert.equal(response.statusCode, 400, `${name} in ${field}: ${response.body}`)
        assert.deepEqual(
          response.json().errors.map((e: { path: string }) => e.path),
          [`body/worker/${field}`],
          `${name} in ${field}`,
        )
      }
    }
    const folded = await app.request(scout, {
      method: 'POST',
      url: `/v1/fanouts/${fanout.fanout_id}/results`,
      payload: { ...ST5_RESULT, worker: { model: '\uff4dodel-x', context_id: null } },
    })
    assert.equal(folded.statusCode, 201, folded.body)
  })
})
