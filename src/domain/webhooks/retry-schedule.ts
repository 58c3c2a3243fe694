/**
 * When a failed delivery is tried again: about 5 s, 30 s, 2 min, 10 min, 30 min, 1 h after each failure, then
 * every 2 h, each delay spread by ±20 % so that the deliveries of a receiver that came back do not all return in
 * the same second. Pure: the caller supplies the schedule and the random number.
 */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000,
]

/** How far each delay may move either way. */
export const RETRY_JITTER = 0.2

/**
 * The delay before the next attempt, after `failedAttempts` (≥ 1) failures: the schedule's entry for it, the last
 * entry repeated beyond its end, times a factor in [1 − jitter, 1 + jitter) picked by `random` in [0, 1).
 */
export function retryDelayMs(failedAttempts: number, schedule: readonly number[], random: number): number {
  if (schedule.length === 0) throw new RangeError('a retry schedule has at least one delay')
  const base = schedule[Math.min(Math.max(failedAttempts, 1), schedule.length) - 1]!
  return Math.round(base * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random))
}

/** What a failed attempt leads to: another attempt later, or giving up because the delivery is too old. */
export function nextAfterFailure(input: {
  failedAttempts: number
  /** Milliseconds since the delivery was created (or last redelivered by hand). */
  ageMs: number
  maxAgeMs: number
  schedule: readonly number[]
  random: number
}): { kind: 'retry'; delayMs: number } | { kind: 'give_up' } {
  const delayMs = retryDelayMs(input.failedAttempts, input.schedule, input.random)
  if (input.ageMs + delayMs > input.maxAgeMs) return { kind: 'give_up' }
  return { kind: 'retry', delayMs }
}

/** What an attempt's answer means: a 2xx succeeds, `410 Gone` disables the webhook, anything else is retried. */
export function classifyStatus(status: number): 'success' | 'gone' | 'retry' {
  if (status >= 200 && status < 300) return 'success'
  if (status === 410) return 'gone'
  return 'retry'
}
