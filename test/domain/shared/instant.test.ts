import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { compareInstants, parseInstant } from '../../../src/domain/shared/instant.ts'

const order = (x: string, y: string) => Math.sign(compareInstants(parseInstant(x), parseInstant(y)))

describe('rfc3339 instants', () => {
  it('compares across offsets as instants', () => {
    assert.equal(order('2025-03-04T10:30:00+02:00', '2025-03-04T09:00:00Z'), -1)
    assert.equal(order('2025-03-04T11:00:00+02:00', '2025-03-04T09:00:00Z'), 0)
  })

  it('keeps digits below the millisecond', () => {
    assert.equal(order('2025-03-04T09:00:00.0004Z', '2025-03-04T09:00:00.0001Z'), 1)
    assert.equal(order('2025-03-04T09:00:00.000100Z', '2025-03-04T09:00:00.0001Z'), 0)
    assert.equal(order('2025-03-04T09:00:00.5Z', '2025-03-04T09:00:00.123456Z'), 1)
  })

  it('accepts the lower-case and space forms RFC 3339 allows', () => {
    assert.equal(order('2025-03-04t09:00:00z', '2025-03-04 09:00:00Z'), 0)
  })

  it('names the field when the text is not a time', () => {
    assert.throws(() => parseInstant('yesterday', 'observed_at'), /observed_at is not an RFC 3339 time/)
  })
})
