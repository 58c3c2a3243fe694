/** How idempotent calls are retried. Calls that are not idempotent are sent exactly once whatever this says. */
export interface RetryOptions {
  /** Attempts in all, the first included (1 = never retry). Default 4. */
  maxAttempts: number
  /** Backoff before the second attempt when the server gives no Retry-After; doubles each time. Default 200 ms. */
  baseDelayMs: number
  /** Upper bound of one backoff delay (before jitter). Default 5,000 ms. */
  maxDelayMs: number
  /**
   * The longest Retry-After the client waits for. A server asking for more is answered by giving up at once
   * with its error (retrying earlier would disregard the server; waiting that long is the caller's decision).
   * Default 60,000 ms.
   */
  maxRetryAfterMs: number
}

export const DEFAULT_RETRY: Readonly<RetryOptions> = Object.freeze({
  maxAttempts: 4,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
  maxRetryAfterMs: 60_000,
})

/** The statuses that say "not now, try again": too many requests, and service unavailable (load shedding). */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 503])

/**
 * Milliseconds a `Retry-After` value asks for (RFC 9110 §10.2.3): delay-seconds, or an HTTP date measured against
 * `now`. A date in the past means "now" (0). Undefined when the header is absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  // Only the HTTP-date forms (each starts with a day name); Date.parse alone accepts far more than HTTP does.
  if (!/^[A-Za-z]{3,9},? /.test(text)) return undefined
  // HTTP dates are always GMT; only the asctime form omits the zone, and Date.parse would read it as local time.
  const at = Date.parse(/ GMT$/.test(text) ? text : `${text} GMT`)
  if (Number.isNaN(at)) return undefined
  return Math.max(0, at - now)
}

/**
 * Exponential backoff with "equal jitter": half the exponential delay is kept, the other half is random, so a
 * crowd of clients that failed together does not come back together, and no client retries at once.
 * `attempt` is the attempt that just failed (1 for the first).
 */
export function backoffDelay(
  attempt: number,
  options: RetryOptions,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1))
  return exponential / 2 + random() * (exponential / 2)
}

/**
 * The wait before retrying a retryable answer: what Retry-After asks (exactly: honouring it means neither earlier
 * nor needlessly later), else the backoff. Undefined when the server asks for longer than the client waits.
 */
export function retryDelay(
  attempt: number,
  retryAfter: string | null | undefined,
  options: RetryOptions,
  now: number,
  random: () => number = Math.random,
): number | undefined {
  const asked = parseRetryAfter(retryAfter, now)
  if (asked === undefined) return backoffDelay(attempt, options, random)
  return asked > options.maxRetryAfterMs ? undefined : asked
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason)
      return
    }
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
