import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import canonicalize from 'canonicalize'
import fc from 'fast-check'
import { evidenceHash } from '../../../src/domain/outcome/evidence.ts'
import {
  CanonicalJsonError,
  canonicalJson,
  canonicalJsonValue,
  canonicalParts,
  hashJson,
  type JsonValue,
  rememberCanonicalJson,
  rememberCanonicalParts,
  sha256,
} from '../../../src/domain/shared/canonical-json.ts'

describe('canonical JSON (RFC 8785)', () => {
  it('serializes the RFC 8785 §3.2.2 example exactly', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    )
    assert.equal(
      canonicalJson(input),
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    )
  })

  it('sorts keys by UTF-16 code units (RFC 8785 §3.2.3)', () => {
    const input = JSON.parse(
      '{"\\u20ac": "Euro Sign", "\\r": "Carriage Return", "\\ufb33": "Hebrew Letter Dalet With Dagesh",' +
        ' "1": "One", "\\ud83d\\ude00": "Emoji: Grinning Face", "\\u0080": "Control", "\\u00f6": "Latin Small Letter O With Diaeresis"}',
    )
    // (Object.values would reorder the integer-like key "1"; read the order off the text instead.)
    const text = canonicalJson(input)
    const order = [...text.matchAll(/":"([^"]+)"/g)].map((m) => m[1])
    assert.deepEqual(order, [
      'Carriage Return',
      'One',
      'Control',
      'Latin Small Letter O With Diaeresis',
      'Euro Sign',
      'Emoji: Grinning Face',
      'Hebrew Letter Dalet With Dagesh',
    ])
  })

  it('formats numbers as ECMAScript does (RFC 8785 Appendix B samples)', () => {
    const samples: [number, string][] = [
      [0, '0'],
      [-0, '0'],
      [1e21, '1e+21'],
      [1e-7, '1e-7'],
      [123456789012345680000, '123456789012345680000'],
      [9007199254740992, '9007199254740992'],
      [0.1, '0.1'],
      [-5e-324, '-5e-324'],
    ]
    for (const [value, text] of samples) assert.equal(canonicalJson(value), text)
  })

  it('refuses what JCS cannot represent', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, '\ud800', { '\udc00': 1 }, [1, '\ud83d']]) {
      assert.throws(() => canonicalJson(bad), CanonicalJsonError)
    }
  })

  it('hashes as sha256:<hex> and evidence as the sorted unique item hashes', () => {
    assert.equal(sha256('abc'), 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    assert.equal(hashJson({ b: 1, a: 2 }), sha256('{"a":2,"b":1}'))
    const items = [hashJson({ kind: 'log', content: 1 }), hashJson({ kind: 'exit_code', content: 0 })]
    assert.equal(evidenceHash([items[0]!, items[1]!, items[0]!]), hashJson([...items].sort()))
  })

  it('serializes parsed JSON with the fast serializer exactly as with the general one', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        assert.equal(canonicalJsonValue(value as JsonValue), canonicalJson(value))
      }),
      { numRuns: 2_000 },
    )
    fc.assert(
      fc.property(fc.json({ depthSize: 'medium' }), (text) => {
        const value = JSON.parse(text)
        assert.equal(canonicalJsonValue(value), canonicalJson(value))
      }),
      { numRuns: 1_000 },
    )
    assert.equal(canonicalJsonValue([1, -0, 1e21, 1e-7, 0.1]), '[1,0,1e+21,1e-7,0.1]')
  })

  it('refuses in the fast serializer what JCS refuses', () => {
    assert.throws(() => canonicalJsonValue({ a: '\ud800' }), CanonicalJsonError)
    assert.throws(() => canonicalJsonValue([Number.NaN]), CanonicalJsonError)
    assert.throws(() => canonicalJsonValue(Number.POSITIVE_INFINITY), CanonicalJsonError)
    assert.throws(() => canonicalJsonValue({ '\udc00': 1 }), CanonicalJsonError)
    assert.throws(() => canonicalJsonValue({ a: { 'x\ud800': 1 } }), CanonicalJsonError)
  })

  it('orders any number of keys as the reference implementation does, whatever order they were written in', () => {
    const names = [
      '\u20ac',
      '\r',
      '\ufb33',
      '1',
      '10',
      '9',
      '\ud83d\ude00',
      '\u0080',
      'a',
      'A',
      'aa',
      '_',
      '',
      'z',
    ]
    for (let size = 0; size <= 40; size++) {
      const keys = Array.from(
        { length: size },
        (_, i) => `${names[(i * 7) % names.length]}${Math.floor(i / 3)}`,
      )
      const forward = Object.fromEntries(keys.map((key, i) => [key, i]))
      const backward = Object.fromEntries([...keys].reverse().map((key, i) => [key, { i }]))
      assert.equal(canonicalJsonValue(forward), canonicalize(forward), `${size} keys`)
      assert.equal(canonicalJsonValue(backward), canonicalize(backward), `${size} keys, reversed`)
    }
    // Names too long to be remembered are quoted each time, the same way.
    const long = { [`${'é'.repeat(70)}"`]: 1, [`${'a'.repeat(65)}\n`]: 2, a: 3 }
    assert.equal(canonicalJsonValue(long), canonicalize(long))
    assert.equal(canonicalJsonValue(long), canonicalize(long))
  })

  it('serializes exactly as the reference implementation, plain data or not', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        assert.equal(canonicalJson(value), canonicalize(value))
      }),
      { numRuns: 2_000 },
    )
    const notPlain = {
      at: new Date(0),
      skipped: undefined,
      list: [undefined, new Date(1), { toJSON: () => 'x' }],
      bare: Object.assign(Object.create(null), { b: 1, a: 2 }),
    }
    assert.equal(canonicalJson(notPlain), canonicalize(notPlain))
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    assert.throws(() => canonicalJson(cycle), CanonicalJsonError)
  })

  it('canonicalizes large parts elsewhere and reuses them: same text, parts disjoint and no longer than the whole', () => {
    const big = fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 30 })
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 3 }),
        big,
        fc.integer({ min: 1, max: 400 }),
        (small, list, min) => {
          const value = JSON.parse(JSON.stringify({ small, list, nested: { list, again: [list, small] } }))
          const parts = canonicalParts(value, min)
          const whole = canonicalize(value)!
          assert.ok(parts.reduce((sum, part) => sum + part.text.length, 0) <= whole.length)
          for (const part of parts) {
            assert.ok(part.text.length >= min)
            let node = value
            for (const token of part.path) node = node[token]
            assert.equal(part.text, canonicalize(node))
          }
          const copy = JSON.parse(JSON.stringify(value))
          rememberCanonicalParts(copy, parts)
          assert.equal(canonicalJson(copy), whole)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('uses a remembered text as it is', () => {
    const node = { b: 1, a: 2 }
    rememberCanonicalJson(node, '{"a":2,"b":1}')
    assert.equal(canonicalJson({ x: node }), '{"x":{"a":2,"b":1}}')
  })
})
