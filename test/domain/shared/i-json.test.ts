import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  findIJsonViolation,
  MAX_JSON_DEPTH,
  numberProblem,
  readJsonBody,
} from '../../../src/domain/shared/i-json.ts'

/**
 * Whether JSON.stringify writes `value` as I-JSON Arbiter takes: no integer beyond ±2^53 (1e20 is written as an
 * integer literal), no U+0000, no prototype-polluting names.
 */
function isSafe(value: unknown): boolean {
  if (typeof value === 'number') return !(Number.isInteger(value) && Math.abs(value) > 2 ** 53)
  if (typeof value === 'string') return !value.includes('\u0000')
  if (Array.isArray(value)) return value.every(isSafe)
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).every(
      ([key, member]) => isSafe(key) && key !== '__proto__' && key !== 'prototype' && isSafe(member),
    )
  }
  return true
}

const safeJson = (maxDepth: number) => fc.jsonValue({ maxDepth }).filter(isSafe)

describe('I-JSON (RFC 7493) scanner', () => {
  it('accepts whatever JSON.stringify writes from safe data, and JSON.parse agrees on it', () => {
    fc.assert(
      fc.property(safeJson(6), fc.constantFrom(0, 2), (value, indent) => {
        const text = JSON.stringify(value, null, indent)
        assert.equal(findIJsonViolation(text), null, text)
        const reading = readJsonBody(Buffer.from(text))
        assert.ok(reading.ok)
        assert.deepEqual(reading.value, JSON.parse(text))
      }),
      { numRuns: 2_000 },
    )
  })

  it('finds a duplicate member name wherever it is, by its JSON Pointer', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 5 }), safeJson(2), { minKeys: 1, maxKeys: 5 }).filter(isSafe),
        fc.array(fc.oneof(fc.string({ maxLength: 4 }), fc.nat(3)), { maxLength: 5 }),
        (object, path) => {
          const [name] = Object.keys(object) as [string]
          const duplicated = `${JSON.stringify(object).slice(0, -1)},${JSON.stringify(name)}:null}`
          // Nest the object under `path` (strings: members, numbers: the last of that many array elements).
          let text = duplicated
          for (const token of [...path].reverse()) {
            text =
              typeof token === 'number'
                ? `[${'0,'.repeat(token)}${text}]`
                : `{${JSON.stringify(token)}:${text}}`
          }
          const pointer = [...path, name].map(
            (t) => `/${String(t).replaceAll('~', '~0').replaceAll('/', '~1')}`,
          )
          assert.deepEqual(findIJsonViolation(text), {
            pointer: pointer.join(''),
            message: `duplicate member name ${JSON.stringify(name)}`,
          })
        },
      ),
      { numRuns: 500 },
    )
  })

  it('tells names apart after unescaping them', () => {
    assert.equal(findIJsonViolation('{"a":1,"\\u0061":2}')?.pointer, '/a')
    assert.equal(findIJsonViolation('{"a\\"b":1,"a\\u0022b":2}')?.pointer, '/a"b')
    assert.equal(findIJsonViolation('{"a":{"a":1},"b":{"a":1}}'), null)
    assert.equal(findIJsonViolation('[{"a":1},{"a":1}]'), null)
  })

  it('refuses inexact integers and numbers beyond a double, and accepts the rest', () => {
    for (const refused of [
      '123456789012345678901234567890',
      '9007199254740993',
      '-9007199254740993',
      '10000000000000000',
      '1e400',
      '-1e400',
      '1E+309',
      '1e-400',
      '-1e-400',
      '0.0000001e-330',
    ]) {
      assert.notEqual(numberProblem(refused), null, refused)
      assert.equal(findIJsonViolation(`[0,${refused}]`)?.pointer, '/1', refused)
    }
    for (const accepted of [
      '0',
      '-0',
      '9007199254740992',
      '-9007199254740992',
      '999999999999999',
      '0.66',
      '1e308',
      '5e-324',
      '0e-400',
      '0.000e999',
      '9007199254740993.5',
      '1.5e300',
    ]) {
      assert.equal(numberProblem(accepted), null, accepted)
    }
  })

  it('refuses NUL and lone surrogates in strings and names, in escapes or raw', () => {
    assert.match(findIJsonViolation('{"a":["\\u0000"]}')?.message ?? '', /U\+0000/)
    assert.equal(findIJsonViolation('{"a":["\\u0000"]}')?.pointer, '/a/0')
    assert.match(findIJsonViolation('{"\\u0000":1}')?.message ?? '', /member name contains U\+0000/)
    for (const lone of ['"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"x\\ud83d"', '"\\ude00\\ud83d"']) {
      assert.match(findIJsonViolation(`{"s":${lone}}`)?.message ?? '', /lone surrogate/, lone)
    }
    assert.equal(findIJsonViolation('"\\ud83d\\ude00 \\\\u0000 \\\\ud800"'), null)
    // Raw lone surrogates only exist in texts built in JavaScript, and are refused too.
    assert.match(findIJsonViolation(`{"s":"a\ud800"}`)?.message ?? '', /lone surrogate/)
    assert.equal(findIJsonViolation(`{"s":"\\ud83d\ude00"}`), null)
  })

  it('refuses nesting deeper than the limit and prototype-polluting names', () => {
    const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
    assert.equal(findIJsonViolation(nested(MAX_JSON_DEPTH)), null)
    assert.match(findIJsonViolation(nested(MAX_JSON_DEPTH + 1))?.message ?? '', /nested deeper/)
    assert.equal(findIJsonViolation('{"a":{"__proto__":1}}')?.pointer, '/a/__proto__')
    assert.equal(findIJsonViolation('{"\\u005f_proto__":1}')?.pointer, '/__proto__')
    assert.equal(findIJsonViolation('{"constructor":{"prototype":{}}}')?.pointer, '/constructor/prototype')
    assert.equal(findIJsonViolation('{"constructor":1,"prototype":{}}'), null)
  })

  it('reads bodies as strict UTF-8 and tells malformed JSON apart', () => {
    const invalid = readJsonBody(Buffer.from([0x22, 0xff, 0x22]))
    assert.deepEqual(invalid, {
      ok: false,
      reason: 'not-i-json',
      pointer: null,
      message: 'the body is not valid UTF-8',
    })
    const malformed = readJsonBody(Buffer.from('{"a":1,}'))
    assert.equal(malformed.ok, false)
    assert.equal(!malformed.ok && malformed.reason, 'malformed-json')
    // A byte order mark is not JSON (RFC 8259 forbids sending one): it stays and the body is malformed.
    assert.equal(readJsonBody(Buffer.from('\uFEFF{}')).ok, false)
  })
})
