import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { backoffDelay, DEFAULT_RETRY, parseRetryAfter, retryDelay, sleep } from '../src/retry.ts'

const NOW = Date.parse('2026-11-29T18:00:00Z')

describe('parseRetryAfter', () => {
  const cases: [string | null | undefined, number | undefined][] = [
    [undefined, undefined],
    [null, undefined],
    ['0', 0],
    ['1', 1_000],
    [' 120 ', 120_000],
    ['Sun, 29 Nov 2026 18:00:05 GMT', 5_000], // IMF-fixdate
    ['Sunday, 29-Nov-26 18:00:07 GMT', 7_000], // obsolete RFC 850
    ['Sun Nov 29 18:00:09 2026', 9_000], // asctime, GMT like every HTTP date
    ['Sun, 29 Nov 2026 17:59:00 GMT', 0], // a date in the past: now
    ['-1', undefined],
    ['1.5', undefined],
    ['soon', undefined],
    ['2026-11-29T18:00:05Z', undefined], // not an HTTP date
    ['', undefined],
  ]
  for (const [header, expected] of cases) {
    it(`reads ${JSON.stringify(header)} as ${expected} ms`, () => {
      assert.equal(parseRetryAfter(header, NOW), expected)
    })
  }
})

describe('backoffDelay', () => {
  it('doubles from baseDelayMs, capped at maxDelayMs, keeping half and jittering the other half', () => {
    const options = { ...DEFAULT_RETRY, baseDelayMs: 100, maxDelayMs: 1_000 }
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((attempt) => backoffDelay(attempt, options, () => 0)),
      [50, 100, 200, 400, 500],
    )
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((attempt) => backoffDelay(attempt, options, () => 1)),
      [100, 200, 400, 800, 1_000],
    )
  })

  it('stays within [half, all] of the capped exponential delay for any attempt and any randomness', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 100_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, baseDelayMs, maxDelayMs, r) => {
          const delay = backoffDelay(attempt, { ...DEFAULT_RETRY, baseDelayMs, maxDelayMs }, () => r)
          const cap = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1))
          return delay >= cap / 2 && delay <= cap
        },
      ),
    )
  })
})

describe('retryDelay', () => {
  it('waits exactly what Retry-After asks, without jitter', () => {
    assert.equal(
      retryDelay(1, '2', DEFAULT_RETRY, NOW, () => 0.9),
      2_000,
    )
    assert.equal(retryDelay(3, 'Sun, 29 Nov 2026 18:00:03 GMT', DEFAULT_RETRY, NOW), 3_000)
  })

  it('falls back to the backoff without a readable Retry-After', () => {
    assert.equal(
      retryDelay(2, undefined, { ...DEFAULT_RETRY, baseDelayMs: 100 }, NOW, () => 0),
      100,
    )
    assert.equal(
      retryDelay(2, 'later', { ...DEFAULT_RETRY, baseDelayMs: 100 }, NOW, () => 0),
      100,
    )
  })

  it('gives up (undefined) when the server asks for longer than maxRetryAfterMs', () => {
    assert.equal(retryDelay(1, '61', DEFAULT_RETRY, NOW), undefined)
    assert.equal(retryDelay(1, '60', DEFAULT_RETRY, NOW), 60_000)
  })
})

describe('sleep', () => {
  it('rejects with the signal reason as soon as it aborts', async () => {
    const controller = new AbortController()
    const started = Date.now()
    setTimeout(() => controller.abort(new Error('stop')), 20)
    await assert.rejects(sleep(10_000, controller.signal), /stop/)
    assert.ok(Date.now() - started < 1_000)
  })

  it('rejects at once on an aborted signal', async () => {
    await assert.rejects(sleep(10, AbortSignal.abort(new Error('already'))), /already/)
  })
})
