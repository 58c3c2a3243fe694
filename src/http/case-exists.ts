import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Queryable } from '../db/pool.ts'
import { AppError } from '../errors.ts'
import { uuidParam } from './schemas/common.ts'

/**
 * A `preValidation` hook for routes on one case (`/v1/<cases>/:id/…`) that take a body: an unknown case id is a
 * 404 before the body is judged, so the codes come in the order every route keeps — 401, 403 by role, 404 for the
 * path's id, then 400 for the body. (Fastify validates the body before any handler runs; this hook runs just
 * before that.) A malformed id is left to the params schema, which answers 400.
 */
export function caseMustExist(
  app: FastifyInstance,
  kind: { noun: string; find(db: Queryable, id: string): Promise<unknown> },
) {
  return async (request: FastifyRequest): Promise<void> => {
    const { id } = request.params as { id?: unknown }
    if (!uuidParam.safeParse(id).success) return
    if ((await kind.find(app.services.db, id as string)) === undefined) {
      throw new AppError('NOT_FOUND', `no ${kind.noun} ${id as string}`)
    }
  }
}
