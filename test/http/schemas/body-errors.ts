/**
 * Runs a body through the same pipeline a route does — the zod type provider's validator, then the
 * app's problem mapping — and returns the problem's `errors`, or null when the body is valid.
 */
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify'
import { validatorCompiler } from 'fastify-type-provider-zod'
import type { z } from 'zod'
import type { ProblemFieldError } from '../../../src/errors.ts'
import { toProblem } from '../../../src/http/errors.ts'

const compile = validatorCompiler as FastifySchemaCompiler<z.ZodType>

export function bodyErrors(schema: z.ZodType, body: unknown): ProblemFieldError[] | null {
  const outcome = compile({ schema, method: 'POST', url: '/test', httpPart: 'body' })(body) as {
    error?: unknown[]
  }
  if (outcome.error === undefined) return null
  const problem = toProblem({ validation: outcome.error, validationContext: 'body' }, {
    url: '/test',
  } as FastifyRequest)
  return problem.errors ?? []
}

/** The parsed value of a valid body. */
export function parsed(schema: z.ZodType, body: unknown): unknown {
  const outcome = compile({ schema, method: 'POST', url: '/test', httpPart: 'body' })(body) as {
    value?: unknown
  }
  return outcome.value
}
