import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import canonicalize from 'canonicalize'
import fc from 'fast-check'
import { canonicalJson } from '../../console/src/canonical-json.ts'

describe('canonicalJson (the console’s RFC 8785)', () => {
  const cases: [string, unknown, string][] = [
    [
      'sorts members by UTF-16 code units, not code points',
      { '\u{1F600}': 1, '\uFFFF': 2, a: 3 },
      '{"a":3,"😀":1,"\uffff":2}',
    ],
    ['writes numbers as ECMAScript does', [1e21, 1e-7, -0, 0.1, 100], '[1e+21,1e-7,0,0.1,100]'],
    ['escapes strings as JSON.stringify does', ['\u2028', '"\\', '\u0001'], '["\u2028","\\"\\\\","\\u0001"]'],
    ['has no white space', { b: [1, { d: null, c: true }], a: 'x' }, '{"a":"x","b":[1,{"c":true,"d":null}]}'],
  ]
  for (const [name, value, expected] of cases) {
    it(name, () => assert.equal(canonicalJson(value), expected))
  }

  it('refuses what JSON cannot hold', () => {
    assert.throws(() => canonicalJson(Number.NaN), TypeError)
    assert.throws(() => canonicalJson(Number.POSITIVE_INFINITY), TypeError)
    assert.throws(() => canonicalJson(() => 1), TypeError)
  })

  it('agrees with an independent JCS implementation on any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        assert.equal(canonicalJson(value), canonicalize(value))
      }),
      { numRuns: 500 },
    )
  })
})
