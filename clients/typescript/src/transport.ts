import {
  ArbiterError,
  ArbiterNetworkError,
  ArbiterProtocolError,
  ArbiterTimeoutError,
  type Problem,
  type RequestLabel,
} from './errors.ts'
import { backoffDelay, RETRYABLE_STATUSES, type RetryOptions, retryDelay, sleep } from './retry.ts'

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the call, including a retry it is waiting to send; the promise rejects with the signal's reason. */
  signal?: AbortSignal
  /** Bound of each attempt (sending, waiting, reading the answer); overrides the client's `timeoutMs`. */
  timeoutMs?: number
  /** Overrides the client's `retry.maxAttempts` for this call (idempotent calls only). */
  maxAttempts?: number
}

/**
 * Whether a call may be sent again when its answer was lost or refused for now: `idempotent` calls (reads, and
 * writes the service deduplicates, by a natural key or by their content) are retried; `once` calls never are.
 */
export type Idempotency = 'idempotent' | 'once'

/** What openapi-fetch returns for one attempt. */
export interface AttemptResult<T> {
  data?: T
  error?: unknown
  response: Response
}

export interface TransportSettings {
  timeoutMs: number
  retry: RetryOptions
  /** Randomness of the backoff jitter (tests pin it). */
  random?: () => number
}

/**
 * Sends one call: each attempt bounded by its timeout and the caller's signal, 2xx answers returned, error answers
 * thrown as ArbiterError, and — for idempotent calls — 429/503 answers and lost connections retried after
 * Retry-After or an exponential backoff with jitter, up to `maxAttempts`.
 */
export async function send<T>(
  request: RequestLabel,
  idempotency: Idempotency,
  settings: TransportSettings,
  options: CallOptions | undefined,
  attempt: (signal: AbortSignal) => Promise<AttemptResult<T>>,
): Promise<T> {
  const signal = options?.signal
  const timeoutMs = options?.timeoutMs ?? settings.timeoutMs
  const maxAttempts =
    idempotency === 'idempotent' ? Math.max(1, options?.maxAttempts ?? settings.retry.maxAttempts) : 1
  for (let attempts = 1; ; attempts++) {
    signal?.throwIfAborted()
    const bounded = boundedSignal(signal, timeoutMs)
    let result: AttemptResult<T>
    try {
      result = await attempt(bounded.signal)
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      if (bounded.timedOut()) throw new ArbiterTimeoutError(request, timeoutMs, attempts)
      // A 2xx body that is not JSON: sending again would not change what the server writes.
      if (err instanceof SyntaxError) {
        throw new ArbiterProtocolError(request, 'the answer is not valid JSON', { cause: err })
      }
      if (attempts >= maxAttempts) throw new ArbiterNetworkError(request, attempts, { cause: err })
      await sleep(backoffDelay(attempts, settings.retry, settings.random), signal)
      continue
    } finally {
      bounded.dispose()
    }

    const { response } = result
    if (response.ok) return result.data as T
    const retryAfter = response.headers.get('retry-after') ?? undefined
    if (attempts < maxAttempts && RETRYABLE_STATUSES.has(response.status)) {
      const delay = retryDelay(attempts, retryAfter, settings.retry, Date.now(), settings.random)
      if (delay !== undefined) {
        await sleep(delay, signal)
        continue
      }
    }
    throw new ArbiterError(problemOf(response, result.error), request, { retryAfter, attempts })
  }
}

/**
 * One controller that aborts when the caller's signal does or when the timer fires; `timedOut()` tells which. A plain
 * listener rather than AbortSignal.any(): fetch only follows the signal it is given weakly, and a composite signal
 * that nothing else holds can be garbage-collected mid-request, after which the caller's abort would reach nothing.
 */
export function boundedSignal(
  outer: AbortSignal | undefined,
  timeoutMs: number,
): { signal: AbortSignal; timedOut(): boolean; dispose(): void } {
  const controller = new AbortController()
  let fired = false
  const onAbort = () => controller.abort(outer!.reason)
  outer?.addEventListener('abort', onAbort, { once: true })
  const handle = setTimeout(() => {
    fired = true
    controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError'))
  }, timeoutMs)
  return {
    signal: controller.signal,
    timedOut: () => fired,
    dispose: () => {
      clearTimeout(handle)
      outer?.removeEventListener('abort', onAbort)
    },
  }
}

/**
 * The problem+json of an error answer. openapi-fetch hands over the body parsed as JSON when it could be, else as
 * text; anything that is not a problem object (a proxy's page, an empty body) is described by a synthesized one.
 */
export function problemOf(response: Response, body: unknown): Problem {
  if (isProblemLike(body)) {
    return {
      ...body,
      type: typeof body.type === 'string' ? body.type : 'about:blank',
      title: typeof body.title === 'string' ? body.title : response.statusText || `HTTP ${response.status}`,
      status: typeof body.status === 'number' ? body.status : response.status,
      detail: typeof body.detail === 'string' ? body.detail : '',
    } as Problem
  }
  const text = typeof body === 'string' ? body.trim() : body === undefined ? '' : JSON.stringify(body)
  return {
    type: 'about:blank',
    title: response.statusText || `HTTP ${response.status}`,
    status: response.status,
    detail: text === '' ? `HTTP ${response.status} without a problem body` : text.slice(0, 500),
  }
}

function isProblemLike(body: unknown): body is Record<string, unknown> {
  return (
    typeof body === 'object' &&
    body !== null &&
    !Array.isArray(body) &&
    ('title' in body || 'detail' in body || 'type' in body)
  )
}
