import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  checkPanel,
  type PanelInput,
  type PanelRule,
  type SubmittedJudge,
  toReviewJudge,
} from '../../../src/domain/review/panel.ts'
import type { ReviewMode } from '../../../src/domain/review/vocabulary.ts'

const IMPLEMENTER = { model: 'model-m', context_id: 'ctx-impl' }

function judge(judge_id: string, extra: Partial<SubmittedJudge> = {}): SubmittedJudge {
  return { judge_id, model: `model-${judge_id}`, context_id: `ctx-${judge_id}`, ...extra }
}

function panel(mode: ReviewMode, judges: SubmittedJudge[], implementer = IMPLEMENTER): PanelInput {
  return { mode, implementer, judges }
}

/** `[path, rule]` of every violation, in the order reported. */
function rules(input: PanelInput): [string, PanelRule][] {
  return checkPanel(input).violations.map((v) => [v.path, v.rule])
}

const VALID: Record<ReviewMode, SubmittedJudge[]> = {
  do_and_judge: [judge('j')],
  two_stage: [judge('spec', { stage: 1 }), judge('quality', { stage: 2 })],
  debate: [judge('a', { role: 'judge' }), judge('b', { role: 'judge' }), judge('m', { role: 'meta' })],
  council: [judge('c1'), judge('c2'), judge('c3')],
}

describe('checkPanel', () => {
  describe('valid panels', () => {
    for (const [mode, judges] of Object.entries(VALID) as [ReviewMode, SubmittedJudge[]][]) {
      it(`accepts a ${mode} panel that follows the rules`, () => {
        assert.deepEqual(checkPanel(panel(mode, judges)), { violations: [], iron_law_violated: false })
      })
    }
    it('accepts a debate without a meta-judge', () => {
      assert.deepEqual(rules(panel('debate', VALID.debate.slice(0, 2))), [])
    })
    it('accepts two_stage judges listed stage 2 first', () => {
      assert.deepEqual(rules(panel('two_stage', [...VALID.two_stage].reverse())), [])
    })
    it('accepts councils of 2 and of 10 judges', () => {
      const ten = Array.from({ length: 10 }, (_, i) => judge(`c${i}`))
      assert.deepEqual(rules(panel('council', ten.slice(0, 2))), [])
      assert.deepEqual(rules(panel('council', ten)), [])
    })
  })

  describe('panel sizes', () => {
    const table: [string, ReviewMode, SubmittedJudge[], [string, PanelRule][]][] = [
      [
        'do_and_judge with two judges',
        'do_and_judge',
        [judge('a'), judge('b')],
        [['/judges/1', 'judge_count']],
      ],
      [
        'do_and_judge with three judges',
        'do_and_judge',
        [judge('a'), judge('b'), judge('c')],
        [
          ['/judges/1', 'judge_count'],
          ['/judges/2', 'judge_count'],
        ],
      ],
      ['two_stage with one judge', 'two_stage', [judge('a', { stage: 1 })], [['/judges/1', 'judge_count']]],
      [
        'two_stage with three judges',
        'two_stage',
        [judge('a', { stage: 1 }), judge('b', { stage: 2 }), judge('c', { stage: 2 })],
        [
          ['/judges/2', 'judge_count'],
          ['/judges/2', 'stage_taken'],
        ],
      ],
      ['council with one judge', 'council', [judge('a')], [['/judges/1', 'judge_count']]],
      [
        'council with eleven judges',
        'council',
        Array.from({ length: 11 }, (_, i) => judge(`c${i}`)),
        [['/judges/10', 'judge_count']],
      ],
      [
        'debate with one judge',
        'debate',
        [judge('a', { role: 'judge' })],
        [['/judges/1', 'debate_judge_count']],
      ],
      [
        'debate with a judge and a meta',
        'debate',
        [judge('a', { role: 'judge' }), judge('m', { role: 'meta' })],
        [['/judges/2', 'debate_judge_count']],
      ],
      [
        'debate with three judges',
        'debate',
        [judge('a', { role: 'judge' }), judge('b', { role: 'judge' }), judge('c', { role: 'judge' })],
        [['/judges/2', 'debate_judge_count']],
      ],
      [
        'debate with two metas',
        'debate',
        [
          judge('a', { role: 'judge' }),
          judge('m1', { role: 'meta' }),
          judge('b', { role: 'judge' }),
          judge('m2', { role: 'meta' }),
        ],
        [['/judges/3', 'meta_count']],
      ],
    ]
    for (const [name, mode, judges, expected] of table) {
      it(`refuses ${name}`, () => assert.deepEqual(rules(panel(mode, judges)), expected))
    }
  })

  describe('where stage and role may appear', () => {
    for (const mode of ['do_and_judge', 'debate', 'council'] as const) {
      for (const stage of [1, 2, null] as const) {
        it(`refuses stage ${stage} in ${mode} (present as null counts as present)`, () => {
          const judges = VALID[mode].map((j, i) => (i === 0 ? { ...j, stage } : j))
          assert.deepEqual(rules(panel(mode, judges)), [['/judges/0', 'stage_outside_two_stage']])
        })
      }
    }
    for (const mode of ['do_and_judge', 'two_stage', 'council'] as const) {
      for (const role of ['judge', 'meta', null] as const) {
        it(`refuses role ${role} in ${mode} (present as null counts as present)`, () => {
          const judges = VALID[mode].map((j, i) => (i === 1 || mode === 'do_and_judge' ? { ...j, role } : j))
          const index = mode === 'do_and_judge' ? 0 : 1
          assert.deepEqual(rules(panel(mode, judges)), [[`/judges/${index}`, 'role_outside_debate']])
        })
      }
    }
    it('treats an undefined stage or role as absent', () => {
      assert.deepEqual(rules(panel('do_and_judge', [judge('a', { stage: undefined, role: undefined })])), [])
    })
    it('refuses a two_stage judge without a stage, absent or null', () => {
      for (const stage of [undefined, null]) {
        assert.deepEqual(rules(panel('two_stage', [judge('a', { stage: 1 }), judge('b', { stage })])), [
          ['/judges/1', 'stage_required'],
        ])
      }
    })
    it('refuses two judges at one stage', () => {
      assert.deepEqual(rules(panel('two_stage', [judge('a', { stage: 2 }), judge('b', { stage: 2 })])), [
        ['/judges/1', 'stage_taken'],
      ])
    })
    it('refuses a debate judge without a role, absent or null, and counts the judges still needed', () => {
      for (const role of [undefined, null]) {
        assert.deepEqual(rules(panel('debate', [judge('a', { role: 'judge' }), judge('b', { role })])), [
          ['/judges/1', 'role_required'],
          ['/judges/2', 'debate_judge_count'],
        ])
      }
    })
  })

  describe('independence', () => {
    it('refuses a duplicate judge_id, compared exactly', () => {
      assert.deepEqual(rules(panel('council', [judge('a'), judge('b'), { ...judge('c'), judge_id: 'a' }])), [
        ['/judges/2', 'duplicate_judge_id'],
      ])
      assert.deepEqual(rules(panel('council', [judge('a'), { ...judge('b'), judge_id: 'A' }])), [])
    })
    it('refuses council judges on one model, whatever its spelling', () => {
      const judges = [
        { judge_id: 'a', model: 'Model-X', context_id: 'ctx-a' },
        { judge_id: 'b', model: 'model-y', context_id: 'ctx-b' },
        { judge_id: 'c', model: '  model-x\t', context_id: 'ctx-c' },
        { judge_id: 'd', model: 'MODEL-Y', context_id: 'ctx-d' },
      ]
      assert.deepEqual(rules(panel('council', judges)), [
        ['/judges/2', 'council_models_distinct'],
        ['/judges/3', 'council_models_distinct'],
      ])
    })
    it('allows one model for several judges outside council, each on a fresh context', () => {
      const judges = [
        { judge_id: 'spec', model: 'model-l', context_id: 'ctx-2', stage: 1 as const },
        { judge_id: 'quality', model: 'model-l', context_id: 'ctx-3', stage: 2 as const },
      ]
      assert.deepEqual(rules(panel('two_stage', judges)), [])
    })
    it('refuses two judges on the same model and context, whatever the spelling', () => {
      const judges = [
        { judge_id: 'a', model: 'model-l', context_id: 'ctx-2', role: 'judge' as const },
        { judge_id: 'b', model: ' MODEL-L', context_id: 'CTX-2 ', role: 'judge' as const },
      ]
      assert.deepEqual(rules(panel('debate', judges)), [['/judges/1', 'shared_context']])
    })
  })

  describe('the iron law', () => {
    const variants: [string, string][] = [
      ['model-m', 'ctx-impl'],
      ['MODEL-M', 'CTX-IMPL'],
      ['  model-m  ', '\tctx-impl\n'],
      ['Model-M ', ' Ctx-Impl'],
    ]
    for (const [model, context_id] of variants) {
      it(`refuses a judge on ${JSON.stringify(model)} / ${JSON.stringify(context_id)} for an implementer on "model-m" / "ctx-impl"`, () => {
        const check = checkPanel(panel('do_and_judge', [{ judge_id: 'j', model, context_id }]))
        assert.deepEqual(
          check.violations.map((v) => [v.path, v.rule]),
          [['/judges/0', 'iron_law']],
        )
        assert.equal(check.iron_law_violated, true)
      })
      it(`refuses a meta-judge on ${JSON.stringify(model)} / ${JSON.stringify(context_id)}`, () => {
        const judges = [
          ...VALID.debate.slice(0, 2),
          { judge_id: 'm', model, context_id, role: 'meta' as const },
        ]
        const check = checkPanel(panel('debate', judges))
        assert.deepEqual(
          check.violations.map((v) => [v.path, v.rule]),
          [['/judges/2', 'iron_law']],
        )
        assert.equal(check.iron_law_violated, true)
      })
    }
    it('normalises the implementer as well', () => {
      const check = checkPanel(
        panel('do_and_judge', [{ judge_id: 'j', model: 'model-m', context_id: 'ctx-1' }], {
          model: ' Model-M',
          context_id: 'CTX-1 ',
        }),
      )
      assert.equal(check.iron_law_violated, true)
    })
    it('allows the implementer’s model on a fresh context, and another model on the implementer’s context', () => {
      const judges = [
        { judge_id: 'fresh', model: 'model-m', context_id: 'ctx-other' },
        { judge_id: 'other', model: 'model-n', context_id: 'ctx-impl' },
      ]
      assert.deepEqual(checkPanel(panel('council', judges)), { violations: [], iron_law_violated: false })
    })
    it('does not fold characters other than case and surrounding white space', () => {
      const judges = [{ judge_id: 'j', model: 'model m', context_id: 'ctx-impl' }]
      assert.equal(checkPanel(panel('do_and_judge', judges)).iron_law_violated, false)
      const inner = [{ judge_id: 'j', model: 'model-m', context_id: 'ctx - impl' }]
      assert.equal(checkPanel(panel('do_and_judge', inner)).iron_law_violated, false)
    })
    it('names the rule, the judge and the implementer’s model and context in the message', () => {
      const [violation] = checkPanel(
        panel('do_and_judge', [{ judge_id: 'spec', model: 'MODEL-M', context_id: 'ctx-impl' }]),
      ).violations
      assert.match(violation!.message, /^iron law: judge "spec" /)
      assert.match(violation!.message, /"model-m"/)
      assert.match(violation!.message, /"ctx-impl"/)
    })
    it('holds under any case and surrounding white space of model and context', () => {
      const spaces = fc
        .array(fc.constantFrom(' ', '\t', '\n', '\u00a0'), { maxLength: 3 })
        .map((s) => s.join(''))
      const spelling = (text: string) =>
        fc
          .tuple(spaces, fc.array(fc.boolean(), { minLength: text.length, maxLength: text.length }), spaces)
          .map(
            ([before, upper, after]) =>
              before + [...text].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('') + after,
          )
      fc.assert(
        fc.property(spelling('model-m'), spelling('ctx-impl'), (model, context_id) => {
          const check = checkPanel(panel('do_and_judge', [{ judge_id: 'j', model, context_id }]))
          return check.iron_law_violated && check.violations.length === 1
        }),
      )
    })
  })

  describe('reporting', () => {
    it('reports every violation, sorted by judge index then rule, with the iron-law flag', () => {
      const check = checkPanel(
        panel('debate', [
          { judge_id: 'a', model: 'model-m', context_id: 'ctx-impl', role: 'judge' },
          { judge_id: 'a', model: 'model-x', context_id: 'ctx-x', stage: 1 },
          { judge_id: 'c', model: 'MODEL-M', context_id: 'CTX-IMPL', role: 'meta' },
        ]),
      )
      assert.deepEqual(
        check.violations.map((v) => [v.path, v.rule]),
        [
          ['/judges/0', 'iron_law'],
          ['/judges/1', 'stage_outside_two_stage'],
          ['/judges/1', 'role_required'],
          ['/judges/1', 'duplicate_judge_id'],
          ['/judges/2', 'shared_context'],
          ['/judges/2', 'iron_law'],
          ['/judges/3', 'debate_judge_count'],
        ],
      )
      assert.equal(check.iron_law_violated, true)
    })
    it('leaves the flag down when the iron law is not among the violations', () => {
      const check = checkPanel(panel('do_and_judge', [judge('a'), judge('b')]))
      assert.equal(check.violations.length, 1)
      assert.equal(check.iron_law_violated, false)
    })
    it('names the judge in every message', () => {
      const check = checkPanel(
        panel('two_stage', [judge('spec', { stage: 1 }), judge('dup', { stage: 1, role: 'judge' })]),
      )
      assert.ok(check.violations.length > 0)
      for (const v of check.violations) assert.match(v.message, /judge "dup"/)
    })
  })
})

describe('toReviewJudge', () => {
  it('keeps exactly the five keys, absent stage and role as null', () => {
    assert.deepEqual(toReviewJudge({ judge_id: 'a', model: 'M', context_id: ' c ' }), {
      judge_id: 'a',
      model: 'M',
      context_id: ' c ',
      stage: null,
      role: null,
    })
    assert.deepEqual(toReviewJudge({ judge_id: 'a', model: 'm', context_id: 'c', stage: 2 }).stage, 2)
    assert.deepEqual(toReviewJudge({ judge_id: 'a', model: 'm', context_id: 'c', role: 'meta' }).role, 'meta')
  })
})
