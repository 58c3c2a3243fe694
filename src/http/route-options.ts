import type { Role } from '../domain/vocabulary.ts'

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
