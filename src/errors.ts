import { LIMITS, type LimitBreach } from './domain/limits.ts'
import type { FieldError } from './domain/shared/field-error.ts'

/** One table of named errors: each maps to an HTTP status and a problem `type` (src/http/errors.ts). */
export const ERRORS = {
  VALIDATION: { status: 400, slug: 'validation-error', title: 'The request is not valid' },
  MALFORMED_JSON: { status: 400, slug: 'malformed-json', title: 'The request body is not valid JSON' },
  MALFORMED_CURSOR: { status: 400, slug: 'malformed-cursor', title: 'The cursor is not valid' },
  MALFORMED_REQUEST: { status: 400, slug: 'malformed-request', title: 'The request is not valid HTTP' },
  UNAUTHORIZED: { status: 401, slug: 'unauthorized', title: 'Authentication required' },
  FORBIDDEN: { status: 403, slug: 'forbidden', title: 'Not allowed for this key' },
  NOT_FOUND: { status: 404, slug: 'not-found', title: 'Not found' },
  METHOD_NOT_ALLOWED: { status: 405, slug: 'method-not-allowed', title: 'Method not allowed on this path' },
  REQUEST_TIMEOUT: { status: 408, slug: 'request-timeout', title: 'The request did not arrive in time' },
  CONFLICT: { status: 409, slug: 'conflict', title: 'Conflict with the current state' },
  PAYLOAD_TOO_LARGE: { status: 413, slug: 'payload-too-large', title: 'Request body too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, slug: 'unsupported-media-type', title: 'Unsupported media type' },
  UNPROCESSABLE: { status: 422, slug: 'unprocessable', title: 'The request cannot be processed' },
  // A review panel with a judge on the implementer's model and context: its own type, so a caller can tell
  // "fix the panel's independence" from any other panel rule without parsing prose.
  JUDGE_NOT_INDEPENDENT: {
    status: 422,
    slug: 'judge-not-independent',
    title: 'A judge is not independent of the implementer',
  },
  // An input over one of the limits of src/domain/limits.ts: the body names the limit (`limit`) and its value
  // (`max`), so a caller can tell which bound it met without parsing prose.
  LIMIT_EXCEEDED: { status: 422, slug: 'limit-exceeded', title: 'A limit was exceeded' },
  RATE_LIMITED: { status: 429, slug: 'rate-limited', title: 'Too many requests' },
  HEADERS_TOO_LARGE: { status: 431, slug: 'headers-too-large', title: 'Request header fields too large' },
  INTERNAL: { status: 500, slug: 'internal', title: 'Internal error' },
  DATABASE_UNAVAILABLE: { status: 503, slug: 'database-unavailable', title: 'Database unavailable' },
  OVERLOADED: { status: 503, slug: 'overloaded', title: 'Service overloaded' },
  LOG_CATCHING_UP: { status: 503, slug: 'log-catching-up', title: 'The audit log is catching up' },
  PROBE_IN_PROGRESS: { status: 503, slug: 'probe-in-progress', title: 'Ground-truth probe still running' },
} as const

export type ErrorName = keyof typeof ERRORS

/** A problem's `errors` item: the domain's field error. */
export type ProblemFieldError = FieldError

export class AppError extends Error {
  override name = 'AppError'
  constructor(
    readonly error: ErrorName,
    readonly detail: string,
    /** Extension members added to the problem body (e.g. `manifest_id` on a late dissent). */
    readonly extensions: Record<string, unknown> = {},
    readonly errors?: ProblemFieldError[],
  ) {
    super(detail)
  }
}

/** `value` when there is one; else a 404 whose detail says what was not found (`no review <id>`). */
export function found<T>(value: T | null | undefined, missing: string): T {
  if (value === undefined || value === null) throw new AppError('NOT_FOUND', missing)
  return value
}

/**
 * The refusal of an input over a limit: 422 `limit-exceeded` naming the limit (`limit`), its value (`max`) and, when
 * known, what the input came to (`actual`); `what` says in words what was counted.
 */
export function limitExceeded(found: LimitBreach, what: string): AppError {
  const extensions: Record<string, unknown> = { limit: found.limit, max: found.max }
  if (found.actual !== undefined) extensions.actual = found.actual
  const detail = `${what}: the limit ${found.limit} is ${LIMITS[found.limit]}${found.actual === undefined ? '' : `, this comes to ${found.actual}`}`
  return new AppError(
    'LIMIT_EXCEEDED',
    detail,
    extensions,
    found.path === undefined
      ? undefined
      : [{ path: found.path, message: `over the limit ${found.limit} (${found.max})` }],
  )
}
