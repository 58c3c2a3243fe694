import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Role } from '../domain/vocabulary.ts'
import type { Actor } from '../services/context.ts'
import { principalOf } from './plugins/app/auth.ts'

/** Where a route stands in the OpenAPI document: its group and what it does. */
export interface Described {
  tag: string
  summary: string
}

/**
 * A route's options: the roles that may call it, and its schema (params, body, query, answers) under its group
 * and summary.
 */
export function routeOptions<Schema extends object>(
  auth: readonly Role[],
  described: Described,
  schema: Schema,
) {
  return { config: { auth }, schema: { tags: [described.tag], summary: described.summary, ...schema } }
}

/** The handler of a route that makes what its body describes, the caller its actor: 201 with what was made. */
export function answerMade<Body>(make: (body: Body, actor: Actor) => Promise<unknown>) {
  return async (request: FastifyRequest, reply: FastifyReply) =>
    reply.code(201).send(await make(request.body as Body, principalOf(request).keyId))
}
