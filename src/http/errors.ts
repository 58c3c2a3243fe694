import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { isDatabaseUnavailable, PG, pgErrorCode } from '../db/pg-errors.ts'
import { CanonicalJsonError } from '../domain/shared/canonical-json.ts'
import { AppError, ERRORS, type ErrorName, type ProblemFieldError } from '../errors.ts'
import { ResponseNotSerializable } from './response-serializer.ts'

export const problemType = (slug: string) => `urn:arbiter:problem:${slug}`

export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string().optional(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .catchall(z.unknown())
  .meta({ id: 'Problem', description: 'RFC 9457 problem details' })

export interface Problem {
  type: string
  title: string
  status: number
  detail: string
  instance?: string
  errors?: ProblemFieldError[]
  [extension: string]: unknown
}

export function buildProblem(
  name: ErrorName,
  detail: string,
  extra: { instance?: string; errors?: ProblemFieldError[]; extensions?: Record<string, unknown> } = {},
): Problem {
  const entry = ERRORS[name]
  const problem: Problem = {
    ...extra.extensions,
    type: problemType(entry.slug),
    title: entry.title,
    status: entry.status,
    detail,
  }
  if (extra.instance !== undefined) problem.instance = extra.instance
  if (extra.errors !== undefined) problem.errors = extra.errors
  return problem
}

// What went wrong in a request, kept for its one log line (src/http/plugins/app/request-log.ts).
const problemsSent = new WeakMap<FastifyReply, { problem: Problem; err?: unknown }>()

/** The problem a reply answered with, and for a 5xx its cause, for the request's log line. */
export function problemSent(reply: FastifyReply): { problem: Problem; err?: unknown } | undefined {
  return problemsSent.get(reply)
}

export function sendProblem(reply: FastifyReply, problem: Problem, cause?: unknown): FastifyReply {
  problemsSent.set(reply, cause === undefined ? { problem } : { problem, err: cause })
  if (problem.status === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', '5')
  return reply.code(problem.status).type('application/problem+json').send(problem)
}

// Fastify's own client-error codes and the problem each becomes.
const FASTIFY_CLIENT_ERRORS: Record<string, ErrorName> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'MALFORMED_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'MALFORMED_JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'VALIDATION',
  FST_ERR_CTP_INVALID_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_VALIDATION: 'VALIDATION',
}

/** Maps anything thrown in a request to an RFC 9457 body; 5xx details are logged, never returned. */
export function toProblem(err: unknown, request: FastifyRequest): Problem {
  const instance = request.url
  if (err instanceof AppError) {
    return buildProblem(err.error, err.detail, { instance, extensions: err.extensions, errors: err.errors })
  }
  if (hasZodFastifySchemaValidationErrors(err)) {
    const where = (err as { validationContext?: string }).validationContext ?? 'body'
    const errors = err.validation.flatMap((issue) => {
      const base = `${where}${issue.instancePath === '/' ? '' : issue.instancePath}`
      const keys = (issue.params as { keys?: unknown }).keys
      // One entry per unknown field, each at its own path, so a client sees exactly what to remove.
      if (issue.keyword === 'unrecognized_keys' && Array.isArray(keys)) {
        return keys.map((key) => ({ path: `${base}/${String(key)}`, message: 'unknown field' }))
      }
      return [{ path: base, message: issue.message ?? 'invalid' }]
    })
    const first = errors[0]
    return buildProblem('VALIDATION', first ? `${first.path}: ${first.message}` : 'invalid request', {
      instance,
      errors,
    })
  }
  if (err instanceof CanonicalJsonError) {
    return buildProblem('VALIDATION', `JSON value cannot be canonicalized (RFC 8785): ${err.message}`, {
      instance,
    })
  }
  const fastifyError = err as FastifyError
  if (fastifyError?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const limit = request.routeOptions?.bodyLimit ?? request.server.initialConfig.bodyLimit
    return buildProblem(
      'PAYLOAD_TOO_LARGE',
      `the request body is larger than ${limit} bytes, the limit set by ARBITER_BODY_LIMIT_BYTES`,
      { instance },
    )
  }
  if (fastifyError?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    const given = request.headers['content-type']
    const shown = given
      ? `content-type ${JSON.stringify(given.length > 100 ? `${given.slice(0, 100)}…` : given)}`
      : 'no content-type'
    return buildProblem(
      'UNSUPPORTED_MEDIA_TYPE',
      `request bodies must be sent as application/json; this one has ${shown}`,
      { instance },
    )
  }
  const mapped = fastifyError?.code ? FASTIFY_CLIENT_ERRORS[fastifyError.code] : undefined
  if (mapped) return buildProblem(mapped, fastifyError.message, { instance })
  if (fastifyError?.statusCode === 429) {
    return buildProblem('RATE_LIMITED', fastifyError.message || 'rate limit exceeded', { instance })
  }
  const code = pgErrorCode(err)
  if (code === PG.UNTRANSLATABLE_CHARACTER || code === PG.CHARACTER_NOT_IN_REPERTOIRE) {
    return buildProblem('VALIDATION', 'strings may not contain U+0000 or invalid characters', { instance })
  }
  if (isDatabaseUnavailable(err)) {
    return buildProblem('DATABASE_UNAVAILABLE', 'the database cannot be reached right now; retry later', {
      instance,
    })
  }
  if (err instanceof ResponseNotSerializable) {
    return buildProblem('INTERNAL', 'the response could not be produced', { instance })
  }
  // Any other 4xx fastify raised itself (e.g. a bad Accept header) keeps its status.
  const status = fastifyError?.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return {
      type: problemType('client-error'),
      title: 'Bad request',
      status,
      detail: fastifyError.message,
      instance,
    }
  }
  return buildProblem('INTERNAL', 'an unexpected error occurred; it has been logged', { instance })
}
