import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { positionOf } from '../../../src/domain/fanout/positions.ts'
import { reconcile } from '../../../src/domain/fanout/reconcile.ts'
import type { PolicyRule } from '../../../src/domain/fanout/vocabulary.ts'
import { canonicalJson } from '../../../src/domain/shared/canonical-json.ts'
import {
  ARCHIVED_PAGE_CLAIM,
  blocked,
  CRM_NOTE_CLAIM,
  claim,
  decided,
  FLOOR,
  factOf,
  fanout,
  input,
  needsContext,
  PARTNER_DISCOUNT,
  result,
  SIXTY_K,
  source,
  VANTAGE_RESULTS,
  vantageFanout,
} from './builders.ts'

const F = 'f'
const DIGEST_A = `sha256:${'a'.repeat(64)}`
const DIGEST_B = `sha256:${'b'.repeat(64)}`

describe('reconcile: the Vantage example', () => {
  it('contests the floor under the default policy, naming the date difference and the carve-out', () => {
    const decision = decided(reconcile(input(vantageFanout(), VANTAGE_RESULTS)))
    assert.equal(decision.verdict, 'CONTESTED')
    assert.equal(decision.directive, 'HALT')
    assert.equal(decision.final, true)
    assert.deepEqual(decision.reasons, [{ code: 'contested_fact', subject: FLOOR }])

    const floor = factOf(decision, FLOOR)
    assert.equal(floor.status, 'contested')
    assert.equal(floor.reason, 'qualifier_difference')
    assert.equal(floor.answer, null)
    assert.equal(floor.rule, null)
    assert.deepEqual(floor.variants, [])
    // The CRM note's date sorts first, so it is p1.
    assert.deepEqual(
      floor.positions.map(
        ({ position_id, effective_date, qualifiers, claims, independent_sources, lost_by }) => ({
          position_id,
          effective_date,
          qualifiers,
          claims,
          independent_sources,
          lost_by,
        }),
      ),
      [
        {
          position_id: 'p1',
          effective_date: '2025-01-22',
          qualifiers: { applies_to: 'new_logos' },
          claims: ['st_5#0'],
          independent_sources: 1,
          lost_by: null,
        },
        {
          position_id: 'p2',
          effective_date: '2025-03-01',
          qualifiers: {},
          claims: ['st_3#0'],
          independent_sources: 1,
          lost_by: null,
        },
      ],
    )
    // Both agree on the value; the carve-out is present on one side only, so `b` is omitted.
    assert.deepEqual(floor.conflicts, [
      {
        a: 'p1',
        b: 'p2',
        differs: ['effective_date', 'qualifiers'],
        qualifier_differences: [{ pointer: '/applies_to', a: 'new_logos' }],
      },
    ])
    assert.ok(!('b' in floor.conflicts[0]!.qualifier_differences[0]!))
    assert.deepEqual(floor.echoes, [])
  })

  it('keeps every claim with its ref, revision, confidence and sources as submitted', () => {
    const floor = factOf(decided(reconcile(input(vantageFanout(), VANTAGE_RESULTS))), FLOOR)
    assert.deepEqual(floor.claims, [
      {
        claim_ref: 'st_3#0',
        subtask_id: 'st_3',
        revision: 1,
        position_id: 'p2',
        confidence: 0.81,
        sources: ARCHIVED_PAGE_CLAIM.sources,
        out_of_scope: false,
      },
      {
        claim_ref: 'st_5#0',
        subtask_id: 'st_5',
        revision: 1,
        position_id: 'p1',
        confidence: 0.66,
        sources: CRM_NOTE_CLAIM.sources,
        out_of_scope: false,
      },
    ])
  })

  it('stays contested under the example policy: source priority never overrides a carve-out', () => {
    const policy = {
      resolve: ['source_priority', 'corroboration'] as PolicyRule[],
      source_priority: ['https://vantage.com/', 'crm://'],
    }
    const floor = factOf(decided(reconcile(input(vantageFanout(policy), VANTAGE_RESULTS))), FLOOR)
    assert.equal(floor.status, 'contested')
    assert.equal(floor.reason, 'qualifier_difference')
  })

  it('keeps both populations as variants under keep_all', () => {
    const decision = decided(
      reconcile(input(vantageFanout({ on_qualifier_difference: 'keep_all' }), VANTAGE_RESULTS)),
    )
    assert.equal(decision.verdict, 'RECONCILED')
    assert.equal(decision.directive, 'PROCEED')
    assert.deepEqual(decision.reasons, [])
    const floor = factOf(decision, FLOOR)
    assert.equal(floor.status, 'scoped')
    assert.equal(floor.answer, null)
    assert.equal(floor.rule, null)
    assert.equal(floor.reason, null)
    // Sorted by JCS(qualifiers): `{"applies_to":…}` before `{}`.
    assert.deepEqual(floor.variants, [
      {
        qualifiers: { applies_to: 'new_logos' },
        status: 'agreed',
        answer: { value: SIXTY_K, effective_date: '2025-01-22', qualifiers: { applies_to: 'new_logos' } },
        rule: null,
        reason: null,
      },
      {
        qualifiers: {},
        status: 'agreed',
        answer: { value: SIXTY_K, effective_date: '2025-03-01', qualifiers: {} },
        rule: null,
        reason: null,
      },
    ])
  })

  it('halts as incomplete when the partner discount was assigned to nobody', () => {
    const definition = fanout({ st_3: [FLOOR], st_5: [FLOOR] }, {}, [FLOOR, PARTNER_DISCOUNT])
    const decision = decided(reconcile(input(definition, VANTAGE_RESULTS)))
    assert.equal(decision.verdict, 'INCOMPLETE')
    assert.equal(decision.directive, 'HALT')
    assert.deepEqual(decision.coverage.uncovered_facts, [PARTNER_DISCOUNT])
    assert.deepEqual(decision.reasons, [
      { code: 'contested_fact', subject: FLOOR },
      { code: 'uncovered_fact', subject: PARTNER_DISCOUNT },
    ])
    assert.equal(factOf(decision, PARTNER_DISCOUNT).status, 'unclaimed')
  })
})

describe('reconcile: waiting for subtasks', () => {
  const definition = fanout({ s1: [F], s2: [F], s0: [F] })
  const one = [result('s1', [claim(F, 1)])]

  it('is pending while a subtask is missing and there is no deadline', () => {
    assert.deepEqual(reconcile(input(definition, one)), { kind: 'pending', missing_subtasks: ['s0', 's2'] })
  })

  it('decides once the deadline has passed, with the missing subtasks as missing', () => {
    const decision = decided(reconcile(input(definition, one, { deadline_passed: true })))
    assert.deepEqual(decision.coverage.missing_subtasks, ['s0', 's2'])
    assert.equal(decision.verdict, 'INCOMPLETE')
    assert.equal(decision.directive, 'HALT')
  })

  it('decides when the owner closes the fan-out, even without a deadline', () => {
    const decision = decided(reconcile(input(definition, one, { closed: true })))
    assert.deepEqual(decision.coverage.missing_subtasks, ['s0', 's2'])
    assert.deepEqual(
      decision.reasons.filter((reason) => reason.code === 'missing_subtask'),
      [
        { code: 'missing_subtask', subject: 's0' },
        { code: 'missing_subtask', subject: 's2' },
      ],
    )
  })

  it('decides when every subtask has returned, deadline or not', () => {
    const all = ['s0', 's1', 's2'].map((id) => result(id, [claim(F, 1)]))
    const decision = decided(reconcile(input(definition, all)))
    assert.equal(decision.verdict, 'RECONCILED')
    assert.deepEqual(decision.coverage.missing_subtasks, [])
  })

  it('counts a NEEDS_CONTEXT or BLOCKED return as returned', () => {
    const decision = reconcile(input(definition, [needsContext('s0'), blocked('s1'), result('s2', [])]))
    assert.equal(decision.kind, 'decided')
  })

  it('proceeds past missing subtasks under on_incomplete: proceed', () => {
    const lenient = fanout({ s1: [F], s2: [F] }, { on_incomplete: 'proceed' })
    const decision = decided(reconcile(input(lenient, [result('s1', [claim(F, 1)])], { closed: true })))
    assert.equal(decision.verdict, 'RECONCILED')
    assert.equal(decision.directive, 'PROCEED')
    assert.deepEqual(decision.reasons, [{ code: 'missing_subtask', subject: 's2' }])
  })
})

describe('reconcile: positions', () => {
  it('merges JCS-equal positions whatever the key order of their values', () => {
    const definition = fanout({ s1: [F], s2: [F] })
    const results = [
      result('s1', [claim(F, { a: 1, b: [1, 2] })]),
      result('s2', [claim(F, { b: [1, 2], a: 1.0 })]),
    ]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    assert.equal(fact.status, 'agreed')
    assert.equal(fact.positions.length, 1)
    assert.deepEqual(fact.positions[0]!.claims, ['s1#0', 's2#0'])
    assert.deepEqual(fact.answer, { value: { a: 1, b: [1, 2] }, effective_date: null, qualifiers: {} })
  })

  it('reads absent effective_date and qualifiers as null and {}', () => {
    const definition = fanout({ s1: [F], s2: [F] })
    const results = [
      result('s1', [{ fact: F, value: 'x', sources: [source('a:1')] }]),
      result('s2', [{ fact: F, value: 'x', effective_date: null, qualifiers: {}, sources: [source('a:2')] }]),
    ]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    assert.equal(fact.positions.length, 1)
    assert.deepEqual(positionOf({ value: 'x' }), { value: 'x', effective_date: null, qualifiers: {} })
  })

  it('names positions p1…pN in the order of JCS(position)', () => {
    const definition = fanout({ s1: [F] }, { resolve: ['corroboration'] })
    const values = ['b', 'a', 10, 9, true, { k: 'c' }]
    const results = [
      result(
        's1',
        values.map((value) => claim(F, value)),
      ),
    ]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    const texts = fact.positions.map(({ value, effective_date, qualifiers }) =>
      canonicalJson({ value, effective_date, qualifiers }),
    )
    assert.deepEqual(texts, [...texts].sort())
    assert.deepEqual(
      fact.positions.map((position) => position.position_id),
      ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'],
    )
  })

  it('orders conflicts by position number, so p2 comes before p10', () => {
    const definition = fanout({ s1: [F] })
    const results = [
      result(
        's1',
        Array.from({ length: 11 }, (_, i) => claim(F, i)),
      ),
    ]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    assert.equal(fact.conflicts.length, (11 * 10) / 2)
    const number = (id: string) => Number(id.slice(1))
    for (let i = 1; i < fact.conflicts.length; i++) {
      const previous = fact.conflicts[i - 1]!
      const current = fact.conflicts[i]!
      assert.ok(
        number(previous.a) < number(current.a) ||
          (previous.a === current.a && number(previous.b) < number(current.b)),
      )
    }
    assert.ok(fact.conflicts.every((conflict) => number(conflict.a) < number(conflict.b)))
  })

  it('sorts claim lists by claim_ref as strings', () => {
    const definition = fanout({ s1: [F] })
    const results = [
      result(
        's1',
        Array.from({ length: 11 }, () => claim(F, 'same')),
      ),
    ]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    const refs = fact.claims.map((entry) => entry.claim_ref)
    assert.deepEqual(refs.slice(0, 3), ['s1#0', 's1#1', 's1#10'])
    assert.deepEqual(fact.positions[0]!.claims, refs)
  })
})

describe('reconcile: conflicts', () => {
  const definition = fanout({ s1: [F], s2: [F] }, { on_qualifier_difference: 'keep_all' })
  const conflictOf = (a: Parameters<typeof claim>[2], b: Parameters<typeof claim>[2], va = 1, vb = 1) =>
    factOf(
      decided(
        reconcile(input(definition, [result('s1', [claim(F, va, a)]), result('s2', [claim(F, vb, b)])])),
      ),
      F,
    ).conflicts

  it('lists the fields that differ, alphabetically', () => {
    const [conflict] = conflictOf(
      { effective_date: '2025-01-01', qualifiers: { region: 'eu' } },
      { effective_date: '2025-02-01', qualifiers: { region: 'us' } },
      1,
      2,
    )
    assert.deepEqual(conflict!.differs, ['effective_date', 'qualifiers', 'value'])
    assert.deepEqual(conflict!.qualifier_differences, [{ pointer: '/region', a: 'eu', b: 'us' }])
  })

  it('reports a value-only difference with no qualifier differences', () => {
    const [conflict] = conflictOf({}, {}, 1, 2)
    assert.deepEqual(conflict, { a: 'p1', b: 'p2', differs: ['value'], qualifier_differences: [] })
  })

  it('tells a date set on one side only from equal dates', () => {
    const [conflict] = conflictOf({ effective_date: '2025-01-01' }, {})
    assert.deepEqual(conflict!.differs, ['effective_date'])
  })

  it('writes carve-outs with the absent side omitted, sorted by pointer and escaped', () => {
    const [conflict] = conflictOf({ qualifiers: { 'a/b': 'x', z: 1 } }, { qualifiers: { m: true, z: 1 } })
    assert.deepEqual(conflict!.qualifier_differences, [
      { pointer: '/a~1b', a: 'x' },
      { pointer: '/m', b: true },
    ])
  })

  it('treats 1 and "1" as different qualifier values', () => {
    // JCS writes the string with a quote, which sorts before the digit: "1" is p1.
    const [conflict] = conflictOf({ qualifiers: { tier: 1 } }, { qualifiers: { tier: '1' } })
    assert.deepEqual(conflict!.qualifier_differences, [{ pointer: '/tier', a: '1', b: 1 }])
  })
})

describe('reconcile: echoes and independent sources', () => {
  it('counts two workers quoting one page, however spelled, as one source', () => {
    const definition = fanout({ s1: [F], s2: [F] })
    const results = [
      result('s1', [claim(F, 'x', { sources: [source('https://Vantage.com/pricing/?utm_source=a')] })]),
      result('s2', [claim(F, 'x', { sources: [source('https://vantage.com:443/pricing#top')] })]),
    ]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    assert.equal(fact.positions[0]!.independent_sources, 1)
    assert.deepEqual(fact.echoes, [{ source: 'https://vantage.com/pricing', claims: ['s1#0', 's2#0'] }])
  })

  it('identifies a source with a digest by the digest alone', () => {
    const definition = fanout({ s1: [F], s2: [F] })
    const results = [
      result('s1', [claim(F, 'x', { sources: [source('https://a.com/1', { content_digest: DIGEST_A })] })]),
      result('s2', [
        claim(F, 'x', { sources: [source('https://mirror.org/1', { content_digest: DIGEST_A })] }),
      ]),
    ]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    assert.equal(fact.positions[0]!.independent_sources, 1)
    assert.deepEqual(fact.echoes, [{ source: DIGEST_A, claims: ['s1#0', 's2#0'] }])
  })

  it('keeps one URL read as two different contents as two sources', () => {
    const definition = fanout({ s1: [F], s2: [F] })
    const results = [
      result('s1', [claim(F, 'x', { sources: [source('https://a.com/1', { content_digest: DIGEST_A })] })]),
      result('s2', [claim(F, 'x', { sources: [source('https://a.com/1', { content_digest: DIGEST_B })] })]),
    ]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    assert.equal(fact.positions[0]!.independent_sources, 2)
    assert.deepEqual(fact.echoes, [])
  })

  it('does not list a source only one subtask cites as an echo', () => {
    const definition = fanout({ s1: [F] })
    const shared = [source('https://a.com/1')]
    const results = [result('s1', [claim(F, 'x', { sources: shared }), claim(F, 'x', { sources: shared })])]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    assert.deepEqual(fact.echoes, [])
    assert.equal(fact.positions[0]!.independent_sources, 1)
  })

  it('joins sources transitively, through a claim of another position', () => {
    // p("x") cites s1 (worker A) and s2 (worker C); the only link is worker B's claim of "y",
    // which cites both: one cluster, one independent source for "x".
    const definition = fanout({ a: [F], b: [F], c: [F] })
    const results = [
      result('a', [claim(F, 'x', { sources: [source('https://one.com/')] })]),
      result('b', [claim(F, 'y', { sources: [source('https://one.com/'), source('https://two.com/')] })]),
      result('c', [claim(F, 'x', { sources: [source('https://two.com/')] })]),
    ]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    const x = fact.positions.find((position) => position.value === 'x')!
    assert.equal(x.independent_sources, 1)
    assert.deepEqual(fact.echoes, [
      { source: 'https://one.com/', claims: ['a#0', 'b#0'] },
      { source: 'https://two.com/', claims: ['b#0', 'c#0'] },
    ])
  })

  it('without the linking claim, the same two sources are independent', () => {
    const definition = fanout({ a: [F], b: [F], c: [F] })
    const results = [
      result('a', [claim(F, 'x', { sources: [source('https://one.com/')] })]),
      result('b', [claim(F, 'y', { sources: [source('https://three.com/')] })]),
      result('c', [claim(F, 'x', { sources: [source('https://two.com/')] })]),
    ]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    assert.equal(fact.positions.find((position) => position.value === 'x')!.independent_sources, 2)
  })

  it('counts out-of-scope claims like any other, and marks them', () => {
    const definition = fanout({ owner: [F], other: [] })
    const results = [
      result('owner', [claim(F, 'x', { sources: [source('https://one.com/')] })]),
      result('other', [claim(F, 'x', { sources: [source('https://two.com/')] })]),
    ]
    const decision = decided(reconcile(input(definition, results)))
    const fact = factOf(decision, F)
    assert.equal(fact.positions[0]!.independent_sources, 2)
    assert.deepEqual(
      fact.claims.map((entry) => [entry.claim_ref, entry.out_of_scope]),
      [
        ['other#0', true],
        ['owner#0', false],
      ],
    )
  })

  it('lets an out-of-scope claim decide corroboration', () => {
    const definition = fanout({ owner: [F], other: [] }, { resolve: ['corroboration'] })
    const results = [
      result('owner', [claim(F, 'x'), claim(F, 'y')]),
      result('other', [claim(F, 'y', { sources: [source('https://elsewhere.com/y')] })]),
    ]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    assert.equal(fact.status, 'resolved')
    assert.deepEqual(fact.answer?.value, 'y')
  })
})

describe('reconcile: policy rules', () => {
  const two = (
    policy: Parameters<typeof fanout>[1],
    a: ReturnType<typeof claim>[],
    b: ReturnType<typeof claim>[],
  ) =>
    factOf(
      decided(reconcile(input(fanout({ s1: [F], s2: [F] }, policy), [result('s1', a), result('s2', b)]))),
      F,
    )

  it('corroboration: most independent sources wins; the loser keeps its place with lost_by', () => {
    const fact = two(
      { resolve: ['corroboration'] },
      [
        claim(F, 'x', { sources: [source('https://a.com/')] }),
        claim(F, 'x', { sources: [source('https://b.com/')] }),
      ],
      [claim(F, 'y')],
    )
    assert.equal(fact.status, 'resolved')
    assert.equal(fact.rule, 'corroboration')
    assert.deepEqual(fact.answer, { value: 'x', effective_date: null, qualifiers: {} })
    assert.deepEqual(
      fact.positions.map((position) => [position.value, position.independent_sources, position.lost_by]),
      [
        ['x', 2, null],
        ['y', 1, 'corroboration'],
      ],
    )
  })

  it('counts one claim citing two sources as one independent source', () => {
    const fact = two(
      { resolve: ['corroboration'] },
      [claim(F, 'x', { sources: [source('https://a.com/'), source('https://b.com/')] })],
      [claim(F, 'y')],
    )
    assert.equal(fact.positions.find((position) => position.value === 'x')!.independent_sources, 1)
    assert.equal(fact.reason, 'no_rule_decides')
  })

  it('corroboration counts clusters, not claims: an echo does not corroborate', () => {
    const echo = [source('https://press.vantage.com/release')]
    const fact = two(
      { resolve: ['corroboration'] },
      [claim(F, 'x', { sources: echo }), claim(F, 'x', { sources: echo })],
      [claim(F, 'y')],
    )
    assert.equal(fact.status, 'contested')
    assert.equal(fact.reason, 'no_rule_decides')
  })

  it('source_priority: the earliest matching prefix wins, matched on the normalised URI', () => {
    const fact = two(
      { resolve: ['source_priority'], source_priority: ['https://vantage.com/', 'crm://'] },
      [claim(F, 'crm', { sources: [source('crm://opp/118204')] })],
      [claim(F, 'page', { sources: [source('HTTPS://VANTAGE.COM/pricing')] })],
    )
    assert.equal(fact.rule, 'source_priority')
    assert.equal(fact.answer?.value, 'page')
    assert.equal(fact.positions.find((position) => position.value === 'crm')!.lost_by, 'source_priority')
  })

  it('source_priority: a position with no matching source ranks last', () => {
    const fact = two(
      { resolve: ['source_priority'], source_priority: ['crm://'] },
      [claim(F, 'crm', { sources: [source('crm://opp/1')] })],
      [claim(F, 'web', { sources: [source('https://vantage.com/')] })],
    )
    assert.equal(fact.answer?.value, 'crm')
  })

  it('source_priority: the best source of a position counts', () => {
    const fact = two(
      { resolve: ['source_priority'], source_priority: ['a://', 'b://', 'c://'] },
      [claim(F, 'x', { sources: [source('c://1'), source('a://1')] })],
      [claim(F, 'y', { sources: [source('b://1')] })],
    )
    assert.equal(fact.answer?.value, 'x')
  })

  it('source_priority: ignores content digests and passes when nothing matches', () => {
    const fact = two(
      { resolve: ['source_priority'], source_priority: [DIGEST_A, 'crm://'] },
      [claim(F, 'x', { sources: [source('https://a.com/', { content_digest: DIGEST_A })] })],
      [claim(F, 'y', { sources: [source('https://b.com/')] })],
    )
    assert.equal(fact.status, 'contested')
    assert.equal(fact.reason, 'no_rule_decides')
  })

  it('most_recent_source: the latest observed_at wins, compared as instants', () => {
    const fact = two(
      { resolve: ['most_recent_source'] },
      // 10:30+02:00 is 08:30Z: earlier than 09:00Z despite the larger clock reading.
      [claim(F, 'x', { sources: [source('a:1', { observed_at: '2025-03-04T10:30:00+02:00' })] })],
      [claim(F, 'y', { sources: [source('a:2', { observed_at: '2025-03-04T09:00:00Z' })] })],
    )
    assert.equal(fact.rule, 'most_recent_source')
    assert.equal(fact.answer?.value, 'y')
  })

  it('most_recent_source: sees sub-millisecond differences', () => {
    const fact = two(
      { resolve: ['most_recent_source'] },
      [claim(F, 'x', { sources: [source('a:1', { observed_at: '2025-03-04T09:00:00.0004Z' })] })],
      [claim(F, 'y', { sources: [source('a:2', { observed_at: '2025-03-04T09:00:00.0001Z' })] })],
    )
    assert.equal(fact.answer?.value, 'x')
  })

  it('most_recent_source: ignores sources without observed_at, and a position with none ranks last', () => {
    const fact = two(
      { resolve: ['most_recent_source'] },
      [claim(F, 'x', { sources: [source('a:1'), source('a:3', { observed_at: '2020-01-01T00:00:00Z' })] })],
      [claim(F, 'y', { sources: [source('a:2')] })],
    )
    assert.equal(fact.answer?.value, 'x')
  })

  it('highest_confidence: the highest claim confidence wins, nulls ignored', () => {
    const fact = two(
      { resolve: ['highest_confidence'] },
      [claim(F, 'x', { confidence: 0.66 }), claim(F, 'x', { confidence: null })],
      [claim(F, 'y', { confidence: 0.81 })],
    )
    assert.equal(fact.rule, 'highest_confidence')
    assert.equal(fact.answer?.value, 'y')
  })

  it('highest_confidence: a position with no confidence ranks last, even below 0', () => {
    const fact = two({ resolve: ['highest_confidence'] }, [claim(F, 'x', { confidence: 0 })], [claim(F, 'y')])
    assert.equal(fact.answer?.value, 'x')
  })

  // Each row: a rule that cannot separate x from y, then one that picks x.
  const tiedThenDecided: [PolicyRule, PolicyRule, ReturnType<typeof claim>[], ReturnType<typeof claim>[]][] =
    [
      [
        'corroboration',
        'highest_confidence',
        [claim(F, 'x', { confidence: 0.9 })],
        [claim(F, 'y', { confidence: 0.5 })],
      ],
      [
        'source_priority',
        'most_recent_source',
        [claim(F, 'x', { sources: [source('crm://1', { observed_at: '2025-01-02T00:00:00Z' })] })],
        [claim(F, 'y', { sources: [source('crm://2', { observed_at: '2025-01-01T00:00:00Z' })] })],
      ],
      [
        'most_recent_source',
        'corroboration',
        [claim(F, 'x', { sources: [source('crm://1')] }), claim(F, 'x', { sources: [source('crm://3')] })],
        [claim(F, 'y', { sources: [source('crm://2')] })],
      ],
      [
        'highest_confidence',
        'source_priority',
        [claim(F, 'x', { confidence: 0.5, sources: [source('crm://1')] })],
        [claim(F, 'y', { confidence: 0.5, sources: [source('https://web/')] })],
      ],
    ]
  for (const [tying, deciding, x, y] of tiedThenDecided) {
    it(`${tying} ties, so ${deciding} decides`, () => {
      const fact = two({ resolve: [tying, deciding], source_priority: ['crm://'] }, x, y)
      assert.equal(fact.status, 'resolved')
      assert.equal(fact.rule, deciding)
      assert.equal(fact.answer?.value, 'x')
      assert.equal(fact.positions.find((position) => position.value === 'y')!.lost_by, deciding)
    })
  }

  it('tries the rules in the order the policy lists them', () => {
    const x = claim(F, 'x', { confidence: 0.9, sources: [source('https://web/')] })
    const y = claim(F, 'y', { confidence: 0.1, sources: [source('crm://1')] })
    const priorityFirst = two(
      { resolve: ['source_priority', 'highest_confidence'], source_priority: ['crm://'] },
      [x],
      [y],
    )
    const confidenceFirst = two(
      { resolve: ['highest_confidence', 'source_priority'], source_priority: ['crm://'] },
      [x],
      [y],
    )
    assert.equal(priorityFirst.answer?.value, 'y')
    assert.equal(confidenceFirst.answer?.value, 'x')
  })

  it('uses no rule the policy does not name', () => {
    const fact = two(
      { resolve: ['highest_confidence'] },
      [claim(F, 'x'), claim(F, 'x', { sources: [source('b:1')] })],
      [claim(F, 'y')],
    )
    assert.equal(fact.status, 'contested')
    assert.equal(fact.reason, 'no_rule_decides')
  })

  it('contests with no rules at all, every lost_by null', () => {
    const fact = two({}, [claim(F, 'x')], [claim(F, 'y')])
    assert.equal(fact.status, 'contested')
    assert.equal(fact.reason, 'no_rule_decides')
    assert.equal(fact.answer, null)
    assert.equal(fact.rule, null)
    assert.ok(fact.positions.every((position) => position.lost_by === null))
  })

  it('looks only at positions still tied, and marks every loser with the deciding rule', () => {
    // Corroboration leaves x and y (2 sources each) and drops z (1); confidence then picks x.
    const definition = fanout({ s1: [F] }, { resolve: ['corroboration', 'highest_confidence'] })
    const claims = [
      claim(F, 'x', { confidence: 0.7, sources: [source('a:1')] }),
      claim(F, 'x', { sources: [source('a:2')] }),
      claim(F, 'y', { confidence: 0.6, sources: [source('a:3')] }),
      claim(F, 'y', { sources: [source('a:4')] }),
      // z is the most confident of all, but was already out.
      claim(F, 'z', { confidence: 0.99, sources: [source('a:5')] }),
    ]
    const fact = factOf(decided(reconcile(input(definition, [result('s1', claims)]))), F)
    assert.equal(fact.answer?.value, 'x')
    assert.equal(fact.rule, 'highest_confidence')
    assert.deepEqual(
      fact.positions.map((position) => [position.value, position.lost_by]),
      [
        ['x', null],
        ['y', 'highest_confidence'],
        ['z', 'highest_confidence'],
      ],
    )
  })

  it('contests when the rules leave two positions tied after every rule', () => {
    const fact = two(
      { resolve: ['corroboration', 'highest_confidence'] },
      [claim(F, 'x', { confidence: 0.5 })],
      [claim(F, 'y', { confidence: 0.5 })],
    )
    assert.equal(fact.reason, 'no_rule_decides')
    assert.ok(fact.positions.every((position) => position.lost_by === null))
  })
})

describe('reconcile: min_independent_sources', () => {
  it('contests an agreed fact resting on fewer independent sources than required', () => {
    const definition = fanout({ s1: [F], s2: [F] }, { min_independent_sources: 2 })
    const echo = [source('https://press.com/release')]
    const results = [
      result('s1', [claim(F, 'x', { sources: echo })]),
      result('s2', [claim(F, 'x', { sources: echo })]),
    ]
    const decision = decided(reconcile(input(definition, results)))
    const fact = factOf(decision, F)
    assert.equal(fact.status, 'contested')
    assert.equal(fact.reason, 'insufficient_corroboration')
    assert.equal(fact.answer, null)
    assert.equal(decision.verdict, 'CONTESTED')
  })

  it('keeps an agreed fact with enough independent sources', () => {
    const definition = fanout({ s1: [F], s2: [F] }, { min_independent_sources: 2 })
    const results = [
      result('s1', [claim(F, 'x', { sources: [source('a:1')] })]),
      result('s2', [claim(F, 'x', { sources: [source('a:2')] })]),
    ]
    assert.equal(factOf(decided(reconcile(input(definition, results))), F).status, 'agreed')
  })

  it('withdraws a resolved answer, its rule and every lost_by', () => {
    const definition = fanout({ s1: [F] }, { resolve: ['highest_confidence'], min_independent_sources: 2 })
    const results = [result('s1', [claim(F, 'x', { confidence: 0.9 }), claim(F, 'y', { confidence: 0.1 })])]
    const fact = factOf(decided(reconcile(input(definition, results))), F)
    assert.equal(fact.status, 'contested')
    assert.equal(fact.reason, 'insufficient_corroboration')
    assert.equal(fact.answer, null)
    assert.equal(fact.rule, null)
    assert.ok(fact.positions.every((position) => position.lost_by === null))
  })
})

describe('reconcile: keep_all', () => {
  const policy = {
    on_qualifier_difference: 'keep_all' as const,
    resolve: ['highest_confidence' as PolicyRule],
  }

  it('reconciles each qualifier set on its own, with rules and lost_by per set', () => {
    const definition = fanout({ s1: [F] }, policy)
    const claims = [
      claim(F, 50, { qualifiers: { tier: 'renewal' }, confidence: 0.4 }),
      claim(F, 48, { qualifiers: { tier: 'renewal' }, confidence: 0.8 }),
      claim(F, 60, { qualifiers: { tier: 'new' }, confidence: 0.1 }),
    ]
    const fact = factOf(decided(reconcile(input(definition, [result('s1', claims)]))), F)
    assert.equal(fact.status, 'scoped')
    assert.deepEqual(
      fact.variants.map((variant) => [
        variant.qualifiers,
        variant.status,
        variant.answer?.value,
        variant.rule,
      ]),
      [
        [{ tier: 'new' }, 'agreed', 60, null],
        [{ tier: 'renewal' }, 'resolved', 48, 'highest_confidence'],
      ],
    )
    assert.deepEqual(
      fact.positions.map((position) => [position.value, position.lost_by]),
      [
        [60, null],
        [48, null],
        [50, 'highest_confidence'],
      ],
    )
  })

  it('is contested when any set is, with the first contested set’s reason', () => {
    const definition = fanout(
      { s1: [F] },
      { on_qualifier_difference: 'keep_all', min_independent_sources: 2 },
    )
    const claims = [
      // {"a":…} sorts before {"b":…}: set a has no rule to decide, set b lacks corroboration.
      claim(F, 1, { qualifiers: { a: 1 } }),
      claim(F, 2, { qualifiers: { a: 1 } }),
      claim(F, 3, { qualifiers: { b: 1 } }),
    ]
    const decision = decided(reconcile(input(definition, [result('s1', claims)])))
    const fact = factOf(decision, F)
    assert.equal(fact.status, 'contested')
    assert.equal(fact.reason, 'no_rule_decides')
    assert.equal(fact.answer, null)
    assert.deepEqual(
      fact.variants.map((variant) => [variant.status, variant.reason]),
      [
        ['contested', 'no_rule_decides'],
        ['contested', 'insufficient_corroboration'],
      ],
    )
    assert.equal(decision.verdict, 'CONTESTED')
  })

  it('uses the ordinary rules when every position shares its qualifiers', () => {
    const definition = fanout({ s1: [F] }, policy)
    const claims = [claim(F, 1, { confidence: 0.2 }), claim(F, 2, { confidence: 0.3 })]
    const fact = factOf(decided(reconcile(input(definition, [result('s1', claims)]))), F)
    assert.equal(fact.status, 'resolved')
    assert.deepEqual(fact.variants, [])
    assert.equal(fact.answer?.value, 2)
  })
})

describe('reconcile: coverage', () => {
  const definition = fanout({ a: [F], b: [F], c: [F], d: [F], e: [F], f: ['g'] }, {}, [F, 'g', 'h'])
  const results = [
    result('e', [claim(F, 1)], { late: true, revision: 3, received_at: '2026-12-01T00:00:00Z' }),
    needsContext('c', 'which region?'),
    blocked('b', 'CRM is down'),
    result('a', [claim(F, 1)], {
      status: 'DONE_WITH_CONCERNS',
      concerns: ['notes are thin', 'one rep only'],
    }),
  ]
  const decision = decided(reconcile(input(definition, results, { deadline_passed: true })))

  it('lists every subtask, sorted, with MISSING ones nulled', () => {
    assert.deepEqual(
      decision.coverage.subtasks.map((entry) => [entry.subtask_id, entry.status, entry.revision, entry.late]),
      [
        ['a', 'DONE_WITH_CONCERNS', 1, false],
        ['b', 'BLOCKED', 1, false],
        ['c', 'NEEDS_CONTEXT', 1, false],
        ['d', 'MISSING', null, false],
        ['e', 'DONE', 3, true],
        ['f', 'MISSING', null, false],
      ],
    )
    assert.deepEqual(decision.coverage.subtasks[3], {
      subtask_id: 'd',
      status: 'MISSING',
      revision: null,
      received_at: null,
      late: false,
      result_digest: null,
    })
    assert.equal(decision.coverage.subtasks[4]!.received_at, '2026-12-01T00:00:00Z')
  })

  it('collects missing, late, needs_context, blocked and concerns', () => {
    assert.deepEqual(decision.coverage.missing_subtasks, ['d', 'f'])
    assert.deepEqual(decision.coverage.late_subtasks, ['e'])
    assert.deepEqual(decision.coverage.needs_context, [
      { subtask_id: 'c', blocking_question: 'which region?' },
    ])
    assert.deepEqual(decision.coverage.blocked, [{ subtask_id: 'b', blocking_reason: 'CRM is down' }])
    assert.deepEqual(decision.coverage.concerns, [
      { subtask_id: 'a', concerns: ['notes are thin', 'one rep only'] },
    ])
  })

  it('counts facts without any claim as uncovered, and keeps the creation overlaps', () => {
    assert.deepEqual(decision.coverage.uncovered_facts, ['g', 'h'])
    assert.deepEqual(decision.coverage.overlaps, [{ fact: F, subtasks: ['a', 'b', 'c', 'd', 'e'] }])
  })

  it('sorts reasons by code, then subject', () => {
    assert.deepEqual(decision.reasons, [
      { code: 'blocked', subject: 'b' },
      { code: 'missing_subtask', subject: 'd' },
      { code: 'missing_subtask', subject: 'f' },
      { code: 'needs_context', subject: 'c' },
      { code: 'uncovered_fact', subject: 'g' },
      { code: 'uncovered_fact', subject: 'h' },
    ])
  })

  it('lists the facts sorted, each exactly once', () => {
    assert.deepEqual(
      decision.facts.map((fact) => fact.fact),
      [F, 'g', 'h'],
    )
  })
})

describe('reconcile: verdict and directive', () => {
  const contestedClaims = [claim(F, 1), claim(F, 2)]
  type Case = {
    name: string
    on_incomplete: 'halt' | 'proceed'
    results: ReturnType<typeof result>[]
    extraFacts?: string[]
    verdict: string
    directive: string
    final: boolean
  }
  const cases: Case[] = [
    {
      name: 'a worker needing context → INCOMPLETE + REEVALUATE, even with a contested fact',
      on_incomplete: 'halt',
      results: [needsContext('s1'), result('s2', contestedClaims)],
      verdict: 'INCOMPLETE',
      directive: 'REEVALUATE',
      final: false,
    },
    {
      name: 'a worker needing context → REEVALUATE also under proceed',
      on_incomplete: 'proceed',
      results: [needsContext('s1'), blocked('s2')],
      verdict: 'INCOMPLETE',
      directive: 'REEVALUATE',
      final: false,
    },
    {
      name: 'a blocked worker under halt → INCOMPLETE + HALT',
      on_incomplete: 'halt',
      results: [blocked('s1'), result('s2', [claim(F, 1)])],
      verdict: 'INCOMPLETE',
      directive: 'HALT',
      final: true,
    },
    {
      name: 'a blocked worker under proceed → RECONCILED + PROCEED',
      on_incomplete: 'proceed',
      results: [blocked('s1'), result('s2', [claim(F, 1)])],
      verdict: 'RECONCILED',
      directive: 'PROCEED',
      final: true,
    },
    {
      name: 'a blocked worker and a contested fact under proceed → CONTESTED + HALT',
      on_incomplete: 'proceed',
      results: [blocked('s1'), result('s2', contestedClaims)],
      verdict: 'CONTESTED',
      directive: 'HALT',
      final: true,
    },
    {
      name: 'an unclaimed fact under halt → INCOMPLETE + HALT',
      on_incomplete: 'halt',
      results: [result('s1', [claim(F, 1)]), result('s2', [])],
      extraFacts: ['g'],
      verdict: 'INCOMPLETE',
      directive: 'HALT',
      final: true,
    },
    {
      name: 'an unclaimed fact under proceed → RECONCILED + PROCEED',
      on_incomplete: 'proceed',
      results: [result('s1', [claim(F, 1)]), result('s2', [])],
      extraFacts: ['g'],
      verdict: 'RECONCILED',
      directive: 'PROCEED',
      final: true,
    },
    {
      name: 'a contested fact → CONTESTED + HALT',
      on_incomplete: 'halt',
      results: [result('s1', contestedClaims), result('s2', [])],
      verdict: 'CONTESTED',
      directive: 'HALT',
      final: true,
    },
    {
      name: 'concerns and late results alone → RECONCILED + PROCEED',
      on_incomplete: 'halt',
      results: [
        result('s1', [claim(F, 1)], { status: 'DONE_WITH_CONCERNS', concerns: ['thin'] }),
        result('s2', [], { late: true }),
      ],
      verdict: 'RECONCILED',
      directive: 'PROCEED',
      final: true,
    },
  ]
  for (const testCase of cases) {
    it(testCase.name, () => {
      const definition = fanout({ s1: [F], s2: [F] }, { on_incomplete: testCase.on_incomplete }, [
        F,
        ...(testCase.extraFacts ?? []),
      ])
      const decision = decided(reconcile(input(definition, testCase.results)))
      assert.deepEqual(
        [decision.verdict, decision.directive, decision.final],
        [testCase.verdict, testCase.directive, testCase.final],
      )
    })
  }
})

describe('reconcile: inputs it refuses', () => {
  const definition = fanout({ s1: [F] })
  it('a result of an unknown subtask', () => {
    assert.throws(() => reconcile(input(definition, [result('nobody', [])])), RangeError)
  })
  it('two results of one subtask', () => {
    assert.throws(() => reconcile(input(definition, [result('s1', []), result('s1', [])])), RangeError)
  })
  it('a claim about a fact the fan-out does not list', () => {
    assert.throws(() => reconcile(input(definition, [result('s1', [claim('other', 1)])])), RangeError)
  })
  it('an observed_at that is not a time, when a rule reads it', () => {
    const ranked = fanout({ s1: [F] }, { resolve: ['most_recent_source'] })
    const claims = [claim(F, 1, { sources: [source('a:1', { observed_at: 'yesterday' })] }), claim(F, 2)]
    assert.throws(() => reconcile(input(ranked, [result('s1', claims)])), /observed_at/)
  })
})

describe('reconcile: cost', () => {
  it('compares distinct positions, not claims: a thousand claims repeating two positions make one conflict', () => {
    const definition = fanout({ s1: [F] }, { resolve: ['corroboration'] })
    const claims = Array.from({ length: 1000 }, (_, i) =>
      claim(F, i % 2 === 0 ? 'x' : 'y', {
        sources: [source(`https://source.example/${i % 3 === 0 ? 'shared' : i}`)],
      }),
    )
    const fact = factOf(decided(reconcile(input(definition, [result('s1', claims)]))), F)
    assert.equal(fact.positions.length, 2)
    assert.equal(fact.conflicts.length, 1)
    assert.equal(fact.claims.length, 1000)
    // The shared source joins every third claim, x's and y's alike, into one cluster.
    const x = fact.positions.find((position) => position.value === 'x')!
    assert.equal(x.independent_sources, 1 + 500 - 167)
  })
})
