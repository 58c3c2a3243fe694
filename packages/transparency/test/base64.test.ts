import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { decodeBase64, encodeBase64 } from '../src/node.ts'

describe('base64', () => {
  it('writes standard, padded base64 (RFC 4648 §4 test vectors)', () => {
    const vectors = ['', 'Zg==', 'Zm8=', 'Zm9v', 'Zm9vYg==', 'Zm9vYmE=', 'Zm9vYmFy']
    vectors.forEach((encoded, n) => {
      const bytes = Buffer.from('foobar'.slice(0, n))
      assert.equal(encodeBase64(bytes), encoded)
      assert.deepEqual(Buffer.from(decodeBase64(encoded)!), bytes)
    })
  })

  it('encodes a view into a larger buffer by its own bytes only', () => {
    assert.equal(encodeBase64(Buffer.from('xxfoo').subarray(2)), 'Zm9v')
  })

  it('round-trips any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
        assert.deepEqual(Buffer.from(decodeBase64(encodeBase64(bytes))!), Buffer.from(bytes))
      }),
    )
  })

  it('refuses every spelling but the canonical one', () => {
    for (const text of [
      'Zg',
      'Zg=',
      'Zh==',
      'Zm9v\n',
      ' Zm9v',
      'Zm-_',
      'Zm9vYmFy=',
      '====',
      'Z===',
      '*m9v',
    ]) {
      assert.equal(decodeBase64(text), undefined, JSON.stringify(text))
    }
  })
})
