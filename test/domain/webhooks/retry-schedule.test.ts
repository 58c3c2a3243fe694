import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  classifyStatus,
  DEFAULT_RETRY_SCHEDULE_MS,
  nextAfterFailure,
  RETRY_JITTER,
  retryDelayMs,
} from '../../../src/domain/webhooks/retry-schedule.ts'

describe('the retry schedule', () => {
  it('waits about 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 2 h', () => {
    const minutes = [1, 2, 3, 4, 5, 6, 7, 8, 20].map(
      (n) => retryDelayMs(n, DEFAULT_RETRY_SCHEDULE_MS, 0.5) / 60_000,
    )
    assert.deepEqual(minutes, [5 / 60, 0.5, 2, 10, 30, 60, 120, 120, 120])
  })

  it('spreads each delay within ±20 %, across the whole range of the random number', () => {
    for (const random of [0, 0.25, 0.5, 0.999999]) {
      for (let failures = 1; failures <= 9; failures++) {
        const base = DEFAULT_RETRY_SCHEDULE_MS[Math.min(failures, DEFAULT_RETRY_SCHEDULE_MS.length) - 1]!
        const delay = retryDelayMs(failures, DEFAULT_RETRY_SCHEDULE_MS, random)
        assert.ok(
          delay >= base * (1 - RETRY_JITTER) && delay <= base * (1 + RETRY_JITTER),
          `${failures}: ${delay}`,
        )
      }
    }
    assert.equal(retryDelayMs(1, [1000], 0), 800)
    assert.equal(retryDelayMs(1, [1000], 0.999999), 1200)
  })

  it('gives up when the next attempt would come after the maximum age', () => {
    const day = 24 * 3_600_000
    const base = { schedule: DEFAULT_RETRY_SCHEDULE_MS, maxAgeMs: day, random: 0.5 }
    assert.deepEqual(nextAfterFailure({ ...base, failedAttempts: 1, ageMs: 0 }), {
      kind: 'retry',
      delayMs: 5_000,
    })
    assert.deepEqual(nextAfterFailure({ ...base, failedAttempts: 12, ageMs: day - 7_200_000 }), {
      kind: 'retry',
      delayMs: 7_200_000,
    })
    assert.deepEqual(nextAfterFailure({ ...base, failedAttempts: 12, ageMs: day - 7_199_999 }), {
      kind: 'give_up',
    })
  })

  it('counts a 2xx as success, 410 as gone, and every other status as a failure to retry', () => {
    assert.equal(classifyStatus(200), 'success')
    assert.equal(classifyStatus(204), 'success')
    assert.equal(classifyStatus(299), 'success')
    assert.equal(classifyStatus(410), 'gone')
    for (const status of [100, 301, 302, 304, 400, 404, 429, 500, 503])
      assert.equal(classifyStatus(status), 'retry')
  })
})
