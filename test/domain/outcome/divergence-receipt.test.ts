import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  actionsDisjoint,
  buildDivergencePair,
  buildDivergencePairs,
  buildDivergenceReceipt,
  classifyDivergence,
  type DivergencePair,
  evidenceDivergence,
  receiptDigest,
  verifyReceiptDigest,
} from '../../../src/domain/outcome/divergence-receipt.ts'
import type { InterpretationInput } from '../../../src/domain/outcome/interpretation.ts'
import type { OutcomeReading } from '../../../src/domain/outcome/vocabulary.ts'
import { hashJson } from '../../../src/domain/shared/canonical-json.ts'

function interp(orchestrator_id: string, overrides: Partial<InterpretationInput> = {}): InterpretationInput {
  return {
    orchestrator_id,
    success_criterion_signature: 'sha256:crit',
    success_criterion: undefined,
    outcome_interpretation: 'success',
    evidence_hash: 'sha256:ev1',
    evidence_item_hashes: ['sha256:i1'],
    intended_action: null,
    revision: 1,
    received_at: '2026-11-29T12:00:00Z',
    ...overrides,
  }
}

function pair(overrides: Partial<DivergencePair> = {}): DivergencePair {
  return {
    a: 'orch-a',
    b: 'orch-b',
    a_interpretation: 'success',
    b_interpretation: 'failure',
    a_criterion_signature: 'sha256:crit',
    b_criterion_signature: 'sha256:crit',
    criteria_divergence: null,
    evidence_divergence: null,
    ...overrides,
  }
}

describe('evidenceDivergence', () => {
  it('is null when both judged the same evidence version', () => {
    assert.equal(
      evidenceDivergence(interp('a'), interp('b', { evidence_item_hashes: ['sha256:other'] })),
      null,
    )
  })

  it('lists the sorted, de-duplicated items only one side saw', () => {
    const a = interp('a', {
      evidence_hash: 'sha256:ev2',
      evidence_item_hashes: ['sha256:i3', 'sha256:i1', 'sha256:i3'],
    })
    const b = interp('b', {
      evidence_hash: 'sha256:ev1',
      evidence_item_hashes: ['sha256:i2', 'sha256:i1', 'sha256:i0'],
    })
    assert.deepEqual(evidenceDivergence(a, b), {
      a_evidence_hash: 'sha256:ev2',
      b_evidence_hash: 'sha256:ev1',
      only_in_a: ['sha256:i3'],
      only_in_b: ['sha256:i0', 'sha256:i2'],
    })
  })

  it('a later version that only adds items has an empty only_in_a for the earlier side', () => {
    const earlier = interp('a', { evidence_hash: 'sha256:ev1', evidence_item_hashes: ['sha256:i1'] })
    const later = interp('b', {
      evidence_hash: 'sha256:ev2',
      evidence_item_hashes: ['sha256:i1', 'sha256:i2'],
    })
    assert.deepEqual(evidenceDivergence(earlier, later), {
      a_evidence_hash: 'sha256:ev1',
      b_evidence_hash: 'sha256:ev2',
      only_in_a: [],
      only_in_b: ['sha256:i2'],
    })
  })
})

describe('buildDivergencePair', () => {
  it('orders the two sides by orchestrator id whatever order they are passed in', () => {
    const x = interp('orch-b', {
      outcome_interpretation: 'failure',
      success_criterion_signature: 'sha256:cb',
      success_criterion: { require: ['a', 'c'] },
      evidence_hash: 'sha256:ev2',
      evidence_item_hashes: ['sha256:i1', 'sha256:i2'],
    })
    const y = interp('orch-a', {
      success_criterion_signature: 'sha256:ca',
      success_criterion: { require: ['a', 'b'] },
    })
    const expected: DivergencePair = {
      a: 'orch-a',
      b: 'orch-b',
      a_interpretation: 'success',
      b_interpretation: 'failure',
      a_criterion_signature: 'sha256:ca',
      b_criterion_signature: 'sha256:cb',
      criteria_divergence: [{ pointer: '/require/1', a: 'b', b: 'c' }],
      evidence_divergence: {
        a_evidence_hash: 'sha256:ev1',
        b_evidence_hash: 'sha256:ev2',
        only_in_a: [],
        only_in_b: ['sha256:i2'],
      },
    }
    assert.deepEqual(buildDivergencePair(x, y), expected)
    assert.deepEqual(buildDivergencePair(y, x), expected)
  })

  it('has no criteria_divergence when one side submitted only a hash', () => {
    const built = buildDivergencePair(
      interp('a', { success_criterion_signature: 'sha256:ca', success_criterion: { x: 1 } }),
      interp('b', { success_criterion_signature: 'sha256:cb', success_criterion: undefined }),
    )
    assert.equal(built.criteria_divergence, null)
    assert.equal(built.a_criterion_signature, 'sha256:ca')
    assert.equal(built.b_criterion_signature, 'sha256:cb')
  })

  it('has exactly the documented field set', () => {
    assert.deepEqual(Object.keys(buildDivergencePair(interp('a'), interp('b'))).sort(), [
      'a',
      'a_criterion_signature',
      'a_interpretation',
      'b',
      'b_criterion_signature',
      'b_interpretation',
      'criteria_divergence',
      'evidence_divergence',
    ])
  })
})

describe('buildDivergencePairs', () => {
  it('emits every included pair once, a < b, sorted by (a, b), from any input order', () => {
    const all = ['c', 'a', 'd', 'b'].map((id) => interp(id))
    const pairs = buildDivergencePairs(all, () => true)
    assert.deepEqual(
      pairs.map((p) => [p.a, p.b]),
      [
        ['a', 'b'],
        ['a', 'c'],
        ['a', 'd'],
        ['b', 'c'],
        ['b', 'd'],
        ['c', 'd'],
      ],
    )
  })

  it('uses JavaScript string order (uppercase before lowercase, "b10" before "b9")', () => {
    const pairs = buildDivergencePairs(
      ['b9', 'b10', 'a', 'B'].map((id) => interp(id)),
      () => true,
    )
    assert.deepEqual(pairs[0]!.a, 'B')
    assert.deepEqual(
      pairs.map((p) => `${p.a}<${p.b}`),
      ['B<a', 'B<b10', 'B<b9', 'a<b10', 'a<b9', 'b10<b9'],
    )
  })

  it('keeps only the pairs the predicate selects', () => {
    const all = [
      interp('a', { outcome_interpretation: 'success' }),
      interp('b', { outcome_interpretation: 'failure' }),
      interp('c', { outcome_interpretation: 'success' }),
    ]
    const pairs = buildDivergencePairs(all, (x, y) => x.outcome_interpretation !== y.outcome_interpretation)
    assert.deepEqual(
      pairs.map((p) => [p.a, p.b]),
      [
        ['a', 'b'],
        ['b', 'c'],
      ],
    )
  })
})

describe('classifyDivergence', () => {
  const evidence = {
    a_evidence_hash: 'sha256:e1',
    b_evidence_hash: 'sha256:e2',
    only_in_a: [],
    only_in_b: [],
  }
  const cases: { name: string; pairs: DivergencePair[]; kind: string }[] = [
    { name: 'same criteria, same evidence', pairs: [pair()], kind: 'interpretation' },
    {
      name: 'same criteria, different evidence',
      pairs: [pair({ evidence_divergence: evidence })],
      kind: 'evidence_seen',
    },
    {
      name: 'different criteria (even with different evidence too)',
      pairs: [pair({ b_criterion_signature: 'sha256:other', evidence_divergence: evidence })],
      kind: 'criteria',
    },
    {
      name: 'criteria in any listed pair wins over evidence in another',
      pairs: [
        pair({ evidence_divergence: evidence }),
        pair({ b: 'orch-c', b_criterion_signature: 'sha256:x' }),
      ],
      kind: 'criteria',
    },
    {
      name: 'evidence in any listed pair wins over a pure interpretation pair',
      pairs: [pair(), pair({ b: 'orch-c', evidence_divergence: evidence })],
      kind: 'evidence_seen',
    },
  ]
  for (const { name, pairs, kind } of cases) {
    it(`${name} → ${kind}`, () => {
      assert.equal(classifyDivergence(pairs), kind)
    })
  }
})

describe('actionsDisjoint (rule 3)', () => {
  const act = (...resources: string[]) => ({ kind: 'compensate' as const, resources })
  const cases: { name: string; all: InterpretationInput[]; disjoint: boolean }[] = [
    {
      name: 'both declared, resources do not intersect',
      all: [
        interp('a', { intended_action: act('refund:re_1') }),
        interp('b', { outcome_interpretation: 'failure', intended_action: act('ledger:l_1') }),
      ],
      disjoint: true,
    },
    {
      name: 'resources intersect',
      all: [
        interp('a', { intended_action: act('refund:re_1', 'x') }),
        interp('b', { outcome_interpretation: 'failure', intended_action: act('refund:re_1') }),
      ],
      disjoint: false,
    },
    {
      name: 'an undeclared action is never disjoint',
      all: [
        interp('a', { intended_action: null }),
        interp('b', { outcome_interpretation: 'failure', intended_action: act('ledger:l_1') }),
      ],
      disjoint: false,
    },
    {
      name: 'two declared actions touching nothing are disjoint',
      all: [
        interp('a', { intended_action: act() }),
        interp('b', { outcome_interpretation: 'failure', intended_action: act() }),
      ],
      disjoint: true,
    },
    {
      name: 'pairs that agree are not compared (shared resource, same reading)',
      all: [
        interp('a', { intended_action: act('r1') }),
        interp('b', { intended_action: act('r1') }),
        interp('c', { outcome_interpretation: 'failure', intended_action: act('r2') }),
      ],
      disjoint: true,
    },
    {
      name: 'an undeclared action on an agreeing side still fails when it differs from another',
      all: [
        interp('a', { intended_action: act('r1') }),
        interp('b', { intended_action: null }),
        interp('c', { outcome_interpretation: 'failure', intended_action: act('r2') }),
      ],
      disjoint: false,
    },
  ]
  for (const { name, all, disjoint } of cases) {
    it(`${name} → ${disjoint}`, () => {
      assert.equal(actionsDisjoint(all), disjoint)
      assert.equal(actionsDisjoint([...all].reverse()), disjoint)
    })
  }
})

describe('buildDivergenceReceipt', () => {
  it('digests exactly sha256(JCS(receipt without receipt_digest)) — pinned against a hand-written JCS text', () => {
    const receipt = buildDivergenceReceipt('criteria', false, [
      pair({
        b_criterion_signature: 'sha256:other',
        criteria_divergence: [{ pointer: '/x', a: 1, b: 2 }],
      }),
    ])
    const jcs =
      '{"actions_disjoint":false,"kind":"criteria","pairs":[{"a":"orch-a","a_criterion_signature":"sha256:crit",' +
      '"a_interpretation":"success","b":"orch-b","b_criterion_signature":"sha256:other","b_interpretation":"failure",' +
      '"criteria_divergence":[{"a":1,"b":2,"pointer":"/x"}],"evidence_divergence":null}]}'
    assert.equal(receipt.receipt_digest, `sha256:${createHash('sha256').update(jcs).digest('hex')}`)
    assert.deepEqual(Object.keys(receipt).sort(), ['actions_disjoint', 'kind', 'pairs', 'receipt_digest'])
  })

  it('verifyReceiptDigest detects any change to the content', () => {
    const receipt = buildDivergenceReceipt('interpretation', true, [pair()])
    assert.equal(verifyReceiptDigest(receipt), true)
    assert.equal(verifyReceiptDigest({ ...receipt, actions_disjoint: false }), false)
    assert.equal(verifyReceiptDigest({ ...receipt, kind: 'evidence_seen' }), false)
    assert.equal(verifyReceiptDigest({ ...receipt, pairs: [pair({ b_interpretation: 'partial' })] }), false)
  })

  const reading = fc.constantFrom<OutcomeReading>('success', 'partial', 'failure')
  const interpretations = fc.uniqueArray(
    fc.record({
      orchestrator_id: fc.constantFrom('a', 'b', 'c', 'd', 'B'),
      success_criterion_signature: fc.constantFrom('sha256:c1', 'sha256:c2'),
      success_criterion: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
      outcome_interpretation: reading,
      evidence_hash: fc.constantFrom('sha256:e1', 'sha256:e2'),
      evidence_item_hashes: fc.uniqueArray(fc.constantFrom('sha256:i1', 'sha256:i2', 'sha256:i3')),
      intended_action: fc.option(
        fc.record({
          kind: fc.constantFrom('proceed' as const, 'compensate' as const),
          resources: fc.uniqueArray(fc.constantFrom('r1', 'r2', 'r3')),
        }),
        { nil: null },
      ),
      revision: fc.integer({ min: 1, max: 3 }),
      received_at: fc.constant('2026-11-29T12:00:00Z'),
    }) as fc.Arbitrary<InterpretationInput>,
    { selector: (i) => i.orchestrator_id, minLength: 2 },
  )

  it('property: receipt_digest always equals the recomputed hash of the rest', () => {
    fc.assert(
      fc.property(interpretations, fc.boolean(), (all, disjoint) => {
        const pairs = buildDivergencePairs(
          all,
          (x, y) => x.outcome_interpretation !== y.outcome_interpretation,
        )
        const receipt = buildDivergenceReceipt(classifyDivergence(pairs), disjoint, pairs)
        const { receipt_digest, ...rest } = receipt
        assert.equal(receipt_digest, hashJson(rest))
        assert.equal(receipt_digest, receiptDigest(rest))
        assert.equal(receipt_digest, hashJson(JSON.parse(JSON.stringify(rest))))
        assert.ok(verifyReceiptDigest(receipt))
      }),
    )
  })

  it('property: pairs are strictly sorted by (a, b) with a < b, and each pair really differs', () => {
    fc.assert(
      fc.property(interpretations, (all) => {
        const pairs = buildDivergencePairs(
          all,
          (x, y) => x.outcome_interpretation !== y.outcome_interpretation,
        )
        const keys = pairs.map((p) => [p.a, p.b] as const)
        for (const [a, b] of keys) assert.ok(a < b)
        for (let i = 1; i < keys.length; i++) {
          const [pa, pb] = keys[i - 1]!
          const [ca, cb] = keys[i]!
          assert.ok(pa < ca || (pa === ca && pb < cb))
        }
        for (const p of pairs) assert.notEqual(p.a_interpretation, p.b_interpretation)
        const readings = new Map(all.map((i) => [i.orchestrator_id, i.outcome_interpretation]))
        let expected = 0
        for (const x of all)
          for (const y of all)
            if (
              x.orchestrator_id < y.orchestrator_id &&
              readings.get(x.orchestrator_id) !== readings.get(y.orchestrator_id)
            )
              expected++
        assert.equal(pairs.length, expected)
      }),
    )
  })
})
