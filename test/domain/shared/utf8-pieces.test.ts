import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { utf8OfPieces } from '../../../src/domain/shared/utf8-pieces.ts'

describe('utf8OfPieces', () => {
  it('writes the UTF-8 bytes of the joined pieces, whatever characters they hold', () => {
    const pieces = ['{"a":', '"été ✓ 𝄞"', '', ',"b":[', 'x'.repeat(100_000), ']}', '\u0000\u007f\u0080\uffff']
    assert.deepEqual(utf8OfPieces(pieces), Buffer.from(pieces.join(''), 'utf8'))
    assert.equal(utf8OfPieces([]).length, 0)
  })
})
