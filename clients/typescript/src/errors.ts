import type { components } from './generated/openapi.ts'

/** An RFC 9457 problem as Arbiter answers it, with any extension members (`manifest_id`, `outcome_id`, …). */
export type Problem = components['schemas']['Problem']

/** One field error of a problem: a JSON Pointer into the request and what is wrong there. */
export type FieldError = NonNullable<Problem['errors']>[number]

/** What the call was, for messages: `POST /v1/outcomes`. */
export interface RequestLabel {
  method: string
  path: string
}

/** The base of every error this client throws, so `instanceof ArbiterClientError` catches them all. */
export class ArbiterClientError extends Error {
  override name = 'ArbiterClientError'
}

/**
 * Arbiter answered with an error status. `problem` is the whole problem+json body (extension members
 * included); the common members are repeated as properties. An answer that was not problem+json (a proxy's HTML
 * page, say) becomes a problem with `type: 'about:blank'` whose `detail` quotes the start of the body.
 */
export class ArbiterError extends ArbiterClientError {
  override name = 'ArbiterError'
  readonly status: number
  readonly type: string
  readonly title: string
  readonly detail: string
  readonly instance: string | undefined
  readonly errors: readonly FieldError[]
  /** Seconds or an HTTP date, as sent with a 429 or 503; undefined when absent. */
  readonly retryAfter: string | undefined
  /** How many times the call was sent before this answer was given up on. */
  readonly attempts: number

  constructor(
    readonly problem: Problem,
    readonly request: RequestLabel,
    options: { retryAfter?: string | undefined; attempts?: number } = {},
  ) {
    super(`${request.method} ${request.path}: ${problem.status} ${problem.title}: ${problem.detail}`)
    this.status = problem.status
    this.type = problem.type
    this.title = problem.title
    this.detail = problem.detail
    this.instance = problem.instance
    this.errors = problem.errors ?? []
    this.retryAfter = options.retryAfter
    this.attempts = options.attempts ?? 1
  }

  /** An extension member of the problem, e.g. `error.extension('manifest_id')` on a 409. */
  extension(name: string): unknown {
    return (this.problem as Record<string, unknown>)[name]
  }

  /** The problem+json body, for logs and structured tool results. */
  toJSON(): Problem {
    return this.problem
  }

  /** The `manifest_id` extension member (409 on a decided outcome, a dissent, a refused result), if present. */
  get manifestId(): string | undefined {
    const value = this.extension('manifest_id')
    return typeof value === 'string' ? value : undefined
  }
}

/**
 * The request never got an answer: connection refused or reset, DNS failure, the body cut off mid-way.
 * `cause` is the underlying error. A call that is not idempotent may or may not have taken effect.
 */
export class ArbiterNetworkError extends ArbiterClientError {
  override name = 'ArbiterNetworkError'
  constructor(
    readonly request: RequestLabel,
    readonly attempts: number,
    options: { cause: unknown },
  ) {
    super(`${request.method} ${request.path}: no answer (${describeCause(options.cause)})`, options)
  }
}

/** One attempt took longer than its timeout and was abandoned. Not retried: the time budget was the caller's. */
export class ArbiterTimeoutError extends ArbiterClientError {
  override name = 'ArbiterTimeoutError'
  constructor(
    readonly request: RequestLabel,
    readonly timeoutMs: number,
    readonly attempts: number,
  ) {
    super(`${request.method} ${request.path}: no answer within ${timeoutMs} ms`)
  }
}

/** Arbiter answered 2xx with something this client cannot read (not JSON, an SSE event without an id). */
export class ArbiterProtocolError extends ArbiterClientError {
  override name = 'ArbiterProtocolError'
  constructor(
    readonly request: RequestLabel,
    message: string,
    options?: { cause: unknown },
  ) {
    super(`${request.method} ${request.path}: ${message}`, options)
  }
}

/** Which check refused a signed envelope, a log proof or a webhook delivery. */
export type VerificationCheck =
  // envelope (JWS)
  | 'malformed'
  | 'alg'
  | 'kid'
  | 'key'
  | 'signature'
  | 'payload'
  | 'digest'
  | 'audit_seq'
  // inclusion in the log
  | 'note'
  | 'record'
  | 'checkpoint'
  | 'tree_size'
  | 'leaf_hash'
  | 'proof'
  // webhook delivery
  | 'timestamp'

/** A manifest, a proof or a webhook delivery that must not be trusted. `check` says which check failed; `message` says why. */
export class ArbiterVerificationError extends ArbiterClientError {
  override name = 'ArbiterVerificationError'
  constructor(
    readonly check: VerificationCheck,
    message: string,
    options?: { cause: unknown },
  ) {
    super(message, options)
  }
}

function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause)
  // undici wraps the useful part ("ECONNREFUSED", "other side closed") in `cause`.
  const inner = cause.cause as { code?: string; message?: string } | undefined
  return inner?.code ?? inner?.message ?? cause.message
}
