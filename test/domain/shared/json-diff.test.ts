import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { criteriaDivergence } from '../../../src/domain/outcome/criteria-diff.ts'
import { hashJson, type JsonValue } from '../../../src/domain/shared/canonical-json.ts'
import { diffJson, type JsonDifference, jsonEqual } from '../../../src/domain/shared/json-diff.ts'
import { escapePointerToken, toJsonPointer } from '../../../src/domain/shared/json-pointer.ts'

/** Independent RFC 6901 evaluation, used to check that every pointer lands on the reported value. */
function resolvePointer(
  doc: JsonValue,
  pointer: string,
): { found: true; value: JsonValue } | { found: false } {
  if (pointer === '') return { found: true, value: doc }
  assert.ok(pointer.startsWith('/'), `pointer ${pointer} must start with /`)
  let current: JsonValue = doc
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~')
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= current.length) return { found: false }
      current = current[Number(token)]!
    } else if (typeof current === 'object' && current !== null) {
      if (!Object.hasOwn(current, token)) return { found: false }
      current = current[token]!
    } else {
      return { found: false }
    }
  }
  return { found: true, value: current }
}

function isSortedUnique(values: readonly string[]): boolean {
  return values.every((value, index) => index === 0 || values[index - 1]! < value)
}

describe('escapePointerToken / toJsonPointer (RFC 6901)', () => {
  const cases: { tokens: string[]; pointer: string }[] = [
    { tokens: [], pointer: '' },
    { tokens: [''], pointer: '/' },
    { tokens: ['a/b'], pointer: '/a~1b' },
    { tokens: ['m~n'], pointer: '/m~0n' },
    { tokens: ['~1'], pointer: '/~01' },
    { tokens: ['require', '1'], pointer: '/require/1' },
    { tokens: ['a', '', 'b'], pointer: '/a//b' },
  ]
  for (const { tokens, pointer } of cases) {
    it(`writes ${JSON.stringify(tokens)} as ${JSON.stringify(pointer)}`, () => {
      assert.equal(toJsonPointer(tokens), pointer)
    })
  }

  it('escapes ~ before / so that a literal "~1" in a key survives', () => {
    assert.equal(escapePointerToken('~/'), '~0~1')
  })
})

describe('jsonEqual', () => {
  const cases: { name: string; a: JsonValue; b: JsonValue; equal: boolean }[] = [
    { name: 'same scalars', a: 1, b: 1, equal: true },
    { name: 'number vs string', a: 1, b: '1', equal: false },
    { name: 'null vs false', a: null, b: false, equal: false },
    { name: 'key order is irrelevant', a: { x: 1, y: 2 }, b: { y: 2, x: 1 }, equal: true },
    { name: 'array order matters', a: [1, 2], b: [2, 1], equal: false },
    { name: 'array vs object with index keys', a: ['x'], b: { 0: 'x' }, equal: false },
    { name: 'extra key', a: { x: 1 }, b: { x: 1, y: null }, equal: false },
    { name: 'same key count, different keys', a: { x: 1 }, b: { y: 1 }, equal: false },
    { name: 'zero and negative zero (JCS writes both as 0)', a: 0, b: -0, equal: true },
    { name: 'nested', a: { r: [{ k: [1, { z: true }] }] }, b: { r: [{ k: [1, { z: true }] }] }, equal: true },
  ]
  for (const { name, a, b, equal } of cases) {
    it(`${name} → ${equal}`, () => {
      assert.equal(jsonEqual(a, b), equal)
      assert.equal(jsonEqual(b, a), equal)
    })
  }
})

describe('diffJson', () => {
  const cases: { name: string; a: JsonValue; b: JsonValue; expected: JsonDifference[] }[] = [
    { name: 'equal documents', a: { x: [1, 2] }, b: { x: [1, 2] }, expected: [] },
    { name: 'root scalars', a: 1, b: 2, expected: [{ pointer: '', a: 1, b: 2 }] },
    { name: 'root type mismatch array vs object', a: [], b: {}, expected: [{ pointer: '', a: [], b: {} }] },
    {
      name: 'the documented example: an array element by index',
      a: { require: ['exit_code == 0', 'receipt present'], min_confidence: 0.8 },
      b: { require: ['exit_code == 0', 'ledger entry present'], min_confidence: 0.8 },
      expected: [{ pointer: '/require/1', a: 'receipt present', b: 'ledger entry present' }],
    },
    {
      name: 'a key only in a omits b',
      a: { x: 1, y: { deep: true } },
      b: { x: 1 },
      expected: [{ pointer: '/y', a: { deep: true } }],
    },
    {
      name: 'a key only in b omits a',
      a: { x: 1 },
      b: { x: 1, y: null },
      expected: [{ pointer: '/y', b: null }],
    },
    {
      name: 'a longer array reports its extra indices on one side only',
      a: [1],
      b: [1, 'two', [3]],
      expected: [
        { pointer: '/1', b: 'two' },
        { pointer: '/2', b: [3] },
      ],
    },
    {
      name: 'number vs string is a leaf difference',
      a: { min_confidence: 0.8 },
      b: { min_confidence: '0.8' },
      expected: [{ pointer: '/min_confidence', a: 0.8, b: '0.8' }],
    },
    {
      name: 'array vs object below the root is reported whole at that point',
      a: { require: ['x'] },
      b: { require: { 0: 'x' } },
      expected: [{ pointer: '/require', a: ['x'], b: { 0: 'x' } }],
    },
    {
      name: 'escapes / and ~ in keys, and the empty key is "/"',
      a: { 'a/b': 1, 'm~n': 1, '': 1 },
      b: { 'a/b': 2, 'm~n': 2, '': 2 },
      expected: [
        { pointer: '/', a: 1, b: 2 },
        { pointer: '/a~1b', a: 1, b: 2 },
        { pointer: '/m~0n', a: 1, b: 2 },
      ],
    },
    {
      name: 'several differences sorted by pointer (string order, so /10 before /2)',
      a: { z: 1, a: { k: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10] }, m: true },
      b: { z: 2, a: { k: [0, 1, 'two', 3, 4, 5, 6, 7, 8, 9, 'ten'] }, m: true },
      expected: [
        { pointer: '/a/k/10', a: 10, b: 'ten' },
        { pointer: '/a/k/2', a: 2, b: 'two' },
        { pointer: '/z', a: 1, b: 2 },
      ],
    },
    {
      name: 'a key named __proto__ is data, not the prototype',
      a: JSON.parse('{"__proto__": 1}') as JsonValue,
      b: {},
      expected: [{ pointer: '/__proto__', a: 1 }],
    },
    {
      name: 'a key present with null differs from an absent key',
      a: { x: null },
      b: {},
      expected: [{ pointer: '/x', a: null }],
    },
  ]
  for (const { name, a, b, expected } of cases) {
    it(name, () => {
      const actual = diffJson(a, b)
      assert.deepEqual(actual, expected)
      // One-sided entries must not even carry the other key as undefined: JCS would drop it,
      // but a consumer reading `'a' in entry` must see the key omitted.
      for (const entry of actual) {
        for (const key of Object.keys(entry)) assert.ok(['pointer', 'a', 'b'].includes(key))
        for (const value of Object.values(entry)) assert.notEqual(value, undefined)
      }
    })
  }
})

describe('diffJson properties', () => {
  const json = fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<JsonValue>
  // Small alphabets make near-identical documents (and so interesting diffs) common.
  const smallJson = fc.letrec<{ value: JsonValue }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constantFrom<JsonValue>(null, true, 0, 1, 'x', '~', '/'),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(fc.constantFrom('a', 'b', 'a/b', 'm~n', '', '0'), tie('value'), { maxKeys: 4 }),
    ),
  })).value

  it('a document diffed with itself is empty, and its criteria divergence null', () => {
    fc.assert(
      fc.property(json, (doc) => {
        assert.deepEqual(diffJson(doc, doc), [])
        assert.deepEqual(diffJson(doc, structuredClone(doc)), [])
        assert.equal(criteriaDivergence(doc, structuredClone(doc)), null)
      }),
    )
  })

  it('pointers are sorted, unique, and none is a prefix path of another', () => {
    fc.assert(
      fc.property(smallJson, smallJson, (a, b) => {
        const pointers = diffJson(a, b).map((entry) => entry.pointer)
        assert.ok(isSortedUnique(pointers), JSON.stringify(pointers))
        for (const p of pointers) {
          for (const q of pointers) if (p !== q) assert.ok(!q.startsWith(p + '/'), `${p} is a prefix of ${q}`)
        }
      }),
    )
  })

  it('is empty exactly when the canonical hashes are equal', () => {
    fc.assert(
      fc.property(smallJson, smallJson, (a, b) => {
        assert.equal(diffJson(a, b).length === 0, hashJson(a) === hashJson(b))
      }),
    )
  })

  it('every pointer resolves to the reported values, and a side is omitted exactly when absent', () => {
    fc.assert(
      fc.property(smallJson, smallJson, (a, b) => {
        for (const entry of diffJson(a, b)) {
          const inA = resolvePointer(a, entry.pointer)
          const inB = resolvePointer(b, entry.pointer)
          assert.ok(inA.found || inB.found)
          assert.equal(Object.hasOwn(entry, 'a'), inA.found)
          assert.equal(Object.hasOwn(entry, 'b'), inB.found)
          if (inA.found) assert.deepEqual(entry.a, inA.value)
          if (inB.found) assert.deepEqual(entry.b, inB.value)
          if (inA.found && inB.found) assert.ok(!jsonEqual(inA.value, inB.value))
        }
      }),
    )
  })

  it('swapping the documents swaps a and b', () => {
    fc.assert(
      fc.property(smallJson, smallJson, (a, b) => {
        const swapped = diffJson(b, a).map(({ pointer, a: left, b: right }) => {
          const entry: JsonDifference = { pointer }
          if (right !== undefined) entry.a = right
          if (left !== undefined) entry.b = left
          return entry
        })
        assert.deepEqual(swapped, diffJson(a, b))
      }),
    )
  })

  it('replacing one value with a string is reported at exactly that pointer, whole', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), json, { minKeys: 1 }),
        fc.nat(),
        fc.string(),
        (doc, index, replacement) => {
          const keys = Object.keys(doc)
          const key = keys[index % keys.length]!
          fc.pre(!jsonEqual(doc[key]!, replacement))
          const edited = { ...doc, [key]: replacement }
          assert.deepEqual(diffJson({ wrap: [doc] }, { wrap: [edited] }), [
            { pointer: `/wrap/0/${escapePointerToken(key)}`, a: doc[key], b: replacement },
          ])
        },
      ),
    )
  })
})
