import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Queryable } from '../db/pool.ts'
import { AppError } from '../errors.ts'
import { uuidParam } from './schemas/common.ts'

/**
 * Route options for routes on one case (`/v1/<cases>/:id/…`) that take a body: an unknown case id is a 404
 * before the body is judged, so the codes come in the order every route keeps — 401, 403 by role, 404 for the
 * path's id, then 400 for the body. Fastify validates the body before any handler runs, so the validation error
 * is attached instead of thrown, and a `preHandler` looks the case up only when there is one to report (a valid
 * body costs no extra query: the handler's service finds an unknown case itself). A malformed id is the params
 * schema's 400.
 */
export function caseIdBeforeBody(
  app: FastifyInstance,
  kind: { noun: string; find(db: Queryable, id: string): Promise<unknown> },
) {
  return {
    attachValidation: true,
    preHandler: async (request: FastifyRequest): Promise<void> => {
      const invalid = request.validationError
      if (!invalid) return
      const { id } = request.params as { id?: unknown }
      if (uuidParam.safeParse(id).success && (await kind.find(app.services.db, id as string)) === undefined) {
        throw new AppError('NOT_FOUND', `no ${kind.noun} ${id as string}`)
      }
      throw invalid
    },
  }
}
