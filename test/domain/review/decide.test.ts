import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  decideReview,
  directiveFor,
  type RecordedVerdict,
  type ReviewDecided,
  type ReviewDecision,
  type ReviewForDecision,
} from '../../../src/domain/review/decide.ts'
import { findingFingerprint } from '../../../src/domain/review/findings.ts'
import { type ReviewJudge, toReviewJudge } from '../../../src/domain/review/panel.ts'
import type { ReviewDirective, ReviewMode } from '../../../src/domain/review/vocabulary.ts'
import { hashJson } from '../../../src/domain/shared/canonical-json.ts'
import { REPORT_STATUSES, type ReportStatus, strictness } from '../../../src/domain/status-report.ts'

// ---------------------------------------------------------------------------
// Builders

function j(judge_id: string, extra: Partial<ReviewJudge> = {}): ReviewJudge {
  return toReviewJudge({ judge_id, model: `model-${judge_id}`, context_id: `ctx-${judge_id}`, ...extra })
}

const PANELS: Record<ReviewMode, ReviewJudge[]> = {
  do_and_judge: [j('solo')],
  // Listed stage 1 first, but "quality" < "spec" by judge_id: sorting must not be confused with staging.
  two_stage: [j('spec', { stage: 1 }), j('quality', { stage: 2 })],
  // Panel order differs from judge_id order so that divergence's a < b is tested.
  debate: [j('zed', { role: 'judge' }), j('amy', { role: 'judge' }), j('meta', { role: 'meta' })],
  council: [j('c3'), j('c1'), j('c2')],
}

function review(mode: ReviewMode, revision = 0, judges = PANELS[mode]): ReviewForDecision {
  return { mode, revision, judges }
}

/** A verdict carrying exactly the keys its status requires, with texts that name the judge. */
function v(judge_id: string, status: ReportStatus, extra: Partial<RecordedVerdict> = {}): RecordedVerdict {
  const body: Record<string, unknown> = { judge_id, revision: 0, status, summary: `${judge_id}: ${status}` }
  if (status === 'DONE' || status === 'DONE_WITH_CONCERNS') body['evidence'] = [`${judge_id} evidence`]
  if (status === 'DONE_WITH_CONCERNS') body['concerns'] = [`${judge_id} concern 1`, `${judge_id} concern 2`]
  if (status === 'NEEDS_CONTEXT') body['blocking_question'] = `${judge_id} asks`
  if (status === 'BLOCKED') body['blocking_reason'] = `${judge_id} is blocked`
  Object.assign(body, extra)
  return {
    judge_id,
    status,
    summary: body['summary'] as string,
    concerns: (body['concerns'] as string[] | undefined) ?? null,
    blocking_question: (body['blocking_question'] as string | undefined) ?? null,
    blocking_reason: (body['blocking_reason'] as string | undefined) ?? null,
    findings: extra.findings ?? [],
    verdict_digest: hashJson(body),
    received_at: '2026-11-29T12:00:00Z',
  }
}

function decided(decision: ReviewDecision): ReviewDecided {
  assert.equal(decision.kind, 'decided', `expected a decision, got ${JSON.stringify(decision)}`)
  return decision as ReviewDecided
}

/** The routing outcome a table row states. */
function routing(decision: ReviewDecision) {
  if (decision.kind === 'pending') return decision
  const { verdict, directive, final, blocking_question, blocking_reason, divergence } = decision
  return { verdict, directive, final, blocking_question, blocking_reason, divergence }
}

const STATUSES = REPORT_STATUSES
const stricter = (...statuses: ReportStatus[]) =>
  statuses.reduce((x, y) => (strictness(y) > strictness(x) ? y : x))

/** What a gating mode says for a status at a revision, with the blocking field of the deciding judge. */
function expectedGate(status: ReportStatus, revision: number, deciding: string) {
  const directive: ReviewDirective =
    status === 'NEEDS_CONTEXT'
      ? 'PAUSE'
      : status === 'BLOCKED'
        ? revision < 2
          ? 'REVISE'
          : 'HAND_BACK'
        : 'APPLY'
  return {
    verdict: status,
    directive,
    final: directive !== 'PAUSE',
    blocking_question: status === 'NEEDS_CONTEXT' ? `${deciding} asks` : null,
    blocking_reason: status === 'BLOCKED' ? `${deciding} is blocked` : null,
  }
}

// ---------------------------------------------------------------------------

describe('directiveFor', () => {
  const table: [ReviewMode, ReportStatus, number, ReviewDirective][] = [
    ['do_and_judge', 'DONE', 0, 'APPLY'],
    ['do_and_judge', 'DONE_WITH_CONCERNS', 2, 'APPLY'],
    ['two_stage', 'NEEDS_CONTEXT', 0, 'PAUSE'],
    ['two_stage', 'NEEDS_CONTEXT', 2, 'PAUSE'],
    ['debate', 'BLOCKED', 0, 'REVISE'],
    ['debate', 'BLOCKED', 1, 'REVISE'],
    ['debate', 'BLOCKED', 2, 'HAND_BACK'],
    ['do_and_judge', 'BLOCKED', 2, 'HAND_BACK'],
    ['two_stage', 'BLOCKED', 2, 'HAND_BACK'],
    ['council', 'BLOCKED', 0, 'ADVISORY'],
    ['council', 'BLOCKED', 2, 'ADVISORY'],
    ['council', 'DONE', 0, 'ADVISORY'],
  ]
  for (const [mode, status, revision, directive] of table) {
    it(`${mode}: ${status} at revision ${revision} → ${directive}`, () => {
      assert.equal(directiveFor(mode, status, revision), directive)
    })
  }
})

describe('decideReview', () => {
  describe('do_and_judge', () => {
    it('waits for the judge', () => {
      assert.deepEqual(decideReview(review('do_and_judge'), []), {
        kind: 'pending',
        missing_judges: ['solo'],
      })
    })
    for (const status of STATUSES) {
      for (const revision of [0, 1, 2]) {
        it(`takes the judge's ${status} at revision ${revision}`, () => {
          assert.deepEqual(routing(decideReview(review('do_and_judge', revision), [v('solo', status)])), {
            ...expectedGate(status, revision, 'solo'),
            divergence: null,
          })
        })
      }
    }
    it('lists the concerns of a DONE_WITH_CONCERNS with APPLY: the caller must act on them', () => {
      const decision = decided(decideReview(review('do_and_judge'), [v('solo', 'DONE_WITH_CONCERNS')]))
      assert.equal(decision.directive, 'APPLY')
      assert.deepEqual(decision.concerns, [
        { judge_id: 'solo', concern: 'solo concern 1' },
        { judge_id: 'solo', concern: 'solo concern 2' },
      ])
    })
  })

  describe('two_stage', () => {
    it('waits only for the stage-1 judge before stage 1 returns', () => {
      assert.deepEqual(decideReview(review('two_stage'), []), { kind: 'pending', missing_judges: ['spec'] })
      // Even if a stage-2 verdict somehow exists, stage 1 is what is needed now.
      assert.deepEqual(decideReview(review('two_stage'), [v('quality', 'DONE')]), {
        kind: 'pending',
        missing_judges: ['spec'],
      })
    })
    for (const s1 of ['DONE', 'DONE_WITH_CONCERNS'] as const) {
      it(`runs stage 2 after a stage-1 ${s1}`, () => {
        assert.deepEqual(decideReview(review('two_stage'), [v('spec', s1)]), {
          kind: 'pending',
          missing_judges: ['quality'],
        })
      })
      for (const s2 of STATUSES) {
        it(`stage 1 ${s1}, stage 2 ${s2} → the stricter, ${stricter(s1, s2)}`, () => {
          const status = stricter(s1, s2)
          // Blocking fields come only from a NEEDS_CONTEXT or BLOCKED, which here only stage 2 can return.
          const deciding = s2 === status ? 'quality' : 'spec'
          assert.deepEqual(routing(decideReview(review('two_stage'), [v('spec', s1), v('quality', s2)])), {
            ...expectedGate(status, 0, deciding),
            divergence: null,
          })
        })
      }
    }
    for (const s1 of ['NEEDS_CONTEXT', 'BLOCKED'] as const) {
      for (const revision of [0, 2]) {
        it(`decides at once on a stage-1 ${s1} at revision ${revision}: stage 2 never runs`, () => {
          assert.deepEqual(routing(decideReview(review('two_stage', revision), [v('spec', s1)])), {
            ...expectedGate(s1, revision, 'spec'),
            divergence: null,
          })
        })
      }
    }
    it('carries the concerns of both stages forward', () => {
      const decision = decided(
        decideReview(review('two_stage'), [
          v('spec', 'DONE_WITH_CONCERNS'),
          v('quality', 'DONE_WITH_CONCERNS'),
        ]),
      )
      assert.equal(decision.verdict, 'DONE_WITH_CONCERNS')
      assert.equal(decision.directive, 'APPLY')
      assert.deepEqual(decision.concerns, [
        { judge_id: 'quality', concern: 'quality concern 1' },
        { judge_id: 'quality', concern: 'quality concern 2' },
        { judge_id: 'spec', concern: 'spec concern 1' },
        { judge_id: 'spec', concern: 'spec concern 2' },
      ])
    })
    it('lists stage and a null role on each verdict item', () => {
      const decision = decided(decideReview(review('two_stage'), [v('spec', 'DONE'), v('quality', 'DONE')]))
      assert.deepEqual(
        decision.verdicts.map((item) => [item.judge_id, item.stage, item.role]),
        [
          ['quality', 2, null],
          ['spec', 1, null],
        ],
      )
    })
  })

  describe('debate', () => {
    it('waits for both judges, never for the meta-judge', () => {
      assert.deepEqual(decideReview(review('debate'), []), {
        kind: 'pending',
        missing_judges: ['amy', 'zed'],
      })
      assert.deepEqual(decideReview(review('debate'), [v('meta', 'DONE')]), {
        kind: 'pending',
        missing_judges: ['amy', 'zed'],
      })
      assert.deepEqual(decideReview(review('debate'), [v('zed', 'DONE'), v('meta', 'BLOCKED')]), {
        kind: 'pending',
        missing_judges: ['amy'],
      })
      assert.equal(decideReview(review('debate'), [v('zed', 'DONE'), v('amy', 'DONE')]).kind, 'decided')
    })
    for (const amy of STATUSES) {
      for (const zed of STATUSES) {
        it(`amy ${amy}, zed ${zed} → ${stricter(amy, zed)}${amy === zed ? '' : ' with a divergence'}`, () => {
          const status = stricter(amy, zed)
          const deciding = amy === status ? 'amy' : 'zed'
          assert.deepEqual(routing(decideReview(review('debate'), [v('zed', zed), v('amy', amy)])), {
            ...expectedGate(status, 0, deciding),
            divergence: amy === zed ? null : { a: 'amy', b: 'zed', a_status: amy, b_status: zed },
          })
        })
      }
    }
    it('lets the meta-judge make the result stricter, and takes the blocking reason from it', () => {
      assert.deepEqual(
        routing(decideReview(review('debate'), [v('amy', 'DONE'), v('zed', 'DONE'), v('meta', 'BLOCKED')])),
        { ...expectedGate('BLOCKED', 0, 'meta'), divergence: null },
      )
    })
    it('never lets the meta-judge make the result looser', () => {
      assert.deepEqual(
        routing(
          decideReview(review('debate', 1), [v('amy', 'DONE'), v('zed', 'BLOCKED'), v('meta', 'DONE')]),
        ),
        {
          ...expectedGate('BLOCKED', 1, 'zed'),
          divergence: { a: 'amy', b: 'zed', a_status: 'DONE', b_status: 'BLOCKED' },
        },
      )
    })
    it('takes the deciding verdict as the first by judge_id among those with the final status', () => {
      const decision = decided(
        decideReview(review('debate'), [
          v('zed', 'NEEDS_CONTEXT'),
          v('meta', 'NEEDS_CONTEXT'),
          v('amy', 'DONE'),
        ]),
      )
      assert.equal(decision.directive, 'PAUSE')
      assert.equal(decision.blocking_question, 'meta asks')
      const both = decided(decideReview(review('debate'), [v('zed', 'BLOCKED'), v('amy', 'BLOCKED')]))
      assert.equal(both.blocking_reason, 'amy is blocked')
      assert.equal(both.divergence, null)
    })
    it('hands back a BLOCKED at revision 2', () => {
      assert.equal(
        decided(decideReview(review('debate', 2), [v('amy', 'BLOCKED'), v('zed', 'DONE')])).directive,
        'HAND_BACK',
      )
    })
    it('lists the meta-judge among the verdicts, with roles and null stages', () => {
      const decision = decided(
        decideReview(review('debate'), [v('zed', 'DONE'), v('meta', 'DONE_WITH_CONCERNS'), v('amy', 'DONE')]),
      )
      assert.deepEqual(
        decision.verdicts.map((item) => [item.judge_id, item.role, item.stage]),
        [
          ['amy', 'judge', null],
          ['meta', 'meta', null],
          ['zed', 'judge', null],
        ],
      )
      assert.deepEqual(
        decision.concerns.map((c) => c.judge_id),
        ['meta', 'meta'],
      )
      assert.equal(decision.verdict, 'DONE_WITH_CONCERNS')
    })
  })

  describe('council', () => {
    it('waits for every judge', () => {
      assert.deepEqual(decideReview(review('council'), [v('c2', 'DONE')]), {
        kind: 'pending',
        missing_judges: ['c1', 'c3'],
      })
    })
    for (const status of STATUSES) {
      it(`is ADVISORY with null blocking fields when every judge says ${status}, even at revision 2`, () => {
        const decision = decideReview(
          review('council', 2),
          PANELS.council.map((judge) => v(judge.judge_id, status)),
        )
        assert.deepEqual(routing(decision), {
          verdict: 'ADVISORY',
          directive: 'ADVISORY',
          final: true,
          blocking_question: null,
          blocking_reason: null,
          divergence: null,
        })
      })
    }
    it('never gates, whatever mix of statuses the judges return', () => {
      fc.assert(
        fc.property(fc.tuple(...PANELS.council.map(() => fc.constantFrom(...STATUSES))), (statuses) => {
          const decision = decided(
            decideReview(
              review('council'),
              PANELS.council.map((judge, i) => v(judge.judge_id, statuses[i]!)),
            ),
          )
          return decision.directive === 'ADVISORY' && decision.blocking_reason === null
        }),
      )
    })
    it('merges the judges’ findings with the panel’s models and stores the union', () => {
      const judges = [
        j('c1', { model: 'Model-A' }),
        j('c2', { model: 'model-b' }),
        j('c3', { model: 'model-c' }),
        j('c4', { model: 'model-d' }),
      ]
      const decision = decided(
        decideReview(review('council', 0, judges), [
          v('c1', 'DONE', {
            findings: [{ severity: 'medium', title: 'Race in cache', location: 'cache.ts' }],
          }),
          v('c2', 'BLOCKED', {
            findings: [
              { severity: 'critical', title: 'race  in CACHE', location: ' cache.ts' },
              { severity: 'low', title: 'Typo', location: '' },
            ],
          }),
          v('c3', 'DONE_WITH_CONCERNS', { findings: [{ severity: 'low', title: 'typo' }] }),
          v('c4', 'DONE'),
        ]),
      )
      assert.deepEqual(decision.findings, [
        {
          fingerprint: findingFingerprint({ title: 'race in cache', location: 'cache.ts' }),
          severity: 'critical',
          title: 'race in cache',
          location: 'cache.ts',
          reported_by: ['c1', 'c2'],
          models: ['Model-A', 'model-b'],
          confidence: 0.5,
        },
        {
          fingerprint: findingFingerprint({ title: 'typo' }),
          severity: 'low',
          title: 'typo',
          location: null,
          reported_by: ['c2', 'c3'],
          models: ['model-b', 'model-c'],
          confidence: 0.5,
        },
      ])
      assert.equal(decision.verdict, 'ADVISORY')
      assert.deepEqual(
        decision.concerns.map((c) => c.judge_id),
        ['c3', 'c3'],
      )
    })
  })

  describe('the manifest items', () => {
    it('lists every recorded verdict sorted by judge_id, with the panel model, [] for no concerns and nulls', () => {
      const decision = decided(
        decideReview(review('council'), [v('c3', 'DONE'), v('c1', 'NEEDS_CONTEXT'), v('c2', 'BLOCKED')]),
      )
      assert.deepEqual(decision.verdicts, [
        {
          judge_id: 'c1',
          model: 'model-c1',
          stage: null,
          role: null,
          status: 'NEEDS_CONTEXT',
          summary: 'c1: NEEDS_CONTEXT',
          concerns: [],
          blocking_question: 'c1 asks',
          blocking_reason: null,
          verdict_digest: v('c1', 'NEEDS_CONTEXT').verdict_digest,
        },
        {
          judge_id: 'c2',
          model: 'model-c2',
          stage: null,
          role: null,
          status: 'BLOCKED',
          summary: 'c2: BLOCKED',
          concerns: [],
          blocking_question: null,
          blocking_reason: 'c2 is blocked',
          verdict_digest: v('c2', 'BLOCKED').verdict_digest,
        },
        {
          judge_id: 'c3',
          model: 'model-c3',
          stage: null,
          role: null,
          status: 'DONE',
          summary: 'c3: DONE',
          concerns: [],
          blocking_question: null,
          blocking_reason: null,
          verdict_digest: v('c3', 'DONE').verdict_digest,
        },
      ])
    })
    it('has no findings outside council', () => {
      for (const mode of ['do_and_judge', 'two_stage', 'debate'] as const) {
        const verdicts = PANELS[mode].map((judge) =>
          v(judge.judge_id, 'DONE', { findings: [{ severity: 'high', title: 'ignored' }] }),
        )
        assert.deepEqual(decided(decideReview(review(mode), verdicts)).findings, [])
      }
    })
    it('accepts verdicts whose optional fields are absent', () => {
      const decision = decided(
        decideReview(review('do_and_judge'), [
          { judge_id: 'solo', status: 'DONE', summary: 's', verdict_digest: 'd' },
        ]),
      )
      assert.deepEqual(decision.verdicts[0]!.concerns, [])
      assert.equal(decision.verdicts[0]!.blocking_question, null)
    })
  })

  describe('caller contract', () => {
    it('refuses a verdict from a judge who is not on the panel', () => {
      assert.throws(() => decideReview(review('do_and_judge'), [v('stranger', 'DONE')]), RangeError)
    })
    it('refuses two verdicts of one judge', () => {
      assert.throws(
        () => decideReview(review('do_and_judge'), [v('solo', 'DONE'), v('solo', 'BLOCKED')]),
        RangeError,
      )
    })
    it('refuses a panel its mode cannot route', () => {
      assert.throws(() => decideReview(review('two_stage', 0, [j('a', { stage: 1 })]), []), RangeError)
      assert.throws(() => decideReview(review('debate', 0, [j('a', { role: 'judge' })]), []), RangeError)
      assert.throws(() => decideReview(review('do_and_judge', 0, [j('a'), j('b')]), []), RangeError)
    })
  })

  describe('properties', () => {
    const MODES = ['do_and_judge', 'two_stage', 'debate', 'council'] as const
    /** Any subset of the panel's judges, each with any status, at any revision. */
    const scenario = fc.constantFrom(...MODES).chain((mode) =>
      fc.record({
        mode: fc.constant(mode),
        revision: fc.integer({ min: 0, max: 2 }),
        statuses: fc.tuple(...PANELS[mode].map(() => fc.option(fc.constantFrom(...STATUSES), { nil: null }))),
        seed: fc.integer(),
      }),
    )
    const verdictsOf = (mode: ReviewMode, statuses: (ReportStatus | null)[]) =>
      PANELS[mode].flatMap((judge, i) => {
        const status = statuses[i]
        return status ? [v(judge.judge_id, status)] : []
      })

    it('does not depend on the order in which verdicts arrived', () => {
      fc.assert(
        fc.property(scenario, ({ mode, revision, statuses, seed }) => {
          const verdicts = verdictsOf(mode, statuses)
          const reordered = shuffle([...verdicts], seed)
          const panel = shuffle([...PANELS[mode]], seed + 1)
          assert.deepEqual(
            decideReview(review(mode, revision, panel), reordered),
            decideReview(review(mode, revision), verdicts),
          )
        }),
      )
    })

    it('debate: never looser than either judge, and exactly the strictest of all recorded verdicts', () => {
      const status = fc.constantFrom(...STATUSES)
      fc.assert(
        fc.property(status, status, fc.option(status, { nil: null }), (amy, zed, meta) => {
          const verdicts = [v('amy', amy), v('zed', zed), ...(meta ? [v('meta', meta)] : [])]
          const decision = decided(decideReview(review('debate'), verdicts))
          const verdict = decision.verdict as ReportStatus
          assert.ok(strictness(verdict) >= strictness(amy))
          assert.ok(strictness(verdict) >= strictness(zed))
          assert.equal(verdict, meta ? stricter(amy, zed, meta) : stricter(amy, zed))
          assert.equal(decision.divergence === null, amy === zed)
        }),
      )
    })

    it('two_stage: never looser than stage 1, and stage 2 matters only after a stage-1 DONE or DONE_WITH_CONCERNS', () => {
      const status = fc.constantFrom(...STATUSES)
      fc.assert(
        fc.property(status, status, (spec, quality) => {
          const early = spec === 'NEEDS_CONTEXT' || spec === 'BLOCKED'
          const verdicts = early ? [v('spec', spec)] : [v('spec', spec), v('quality', quality)]
          const decision = decided(decideReview(review('two_stage'), verdicts))
          assert.equal(decision.verdict, early ? spec : stricter(spec, quality))
        }),
      )
    })

    it('gating modes: PAUSE is the only decision that is not final, and REVISE never appears at revision 2', () => {
      fc.assert(
        fc.property(scenario, ({ mode, revision, statuses }) => {
          const decision = decideReview(review(mode, revision), verdictsOf(mode, statuses))
          if (decision.kind === 'pending') return
          assert.equal(decision.final, decision.directive !== 'PAUSE')
          if (revision === 2) assert.notEqual(decision.directive, 'REVISE')
          const blocking = ['PAUSE', 'REVISE', 'HAND_BACK'].includes(decision.directive)
          if (!blocking) {
            assert.equal(decision.blocking_question, null)
            assert.equal(decision.blocking_reason, null)
          }
        }),
      )
    })
  })
})

/** Deterministic Fisher–Yates shuffle driven by a seed. */
function shuffle<T>(items: T[], seed: number): T[] {
  let state = seed >>> 0 || 1
  for (let i = items.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0
    const k = state % (i + 1)
    ;[items[i], items[k]] = [items[k]!, items[i]!]
  }
  return items
}
