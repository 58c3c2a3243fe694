import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Queryable } from '../db/pool.ts'
import { AppError } from '../errors.ts'
import { uuidParam } from './schemas/common.ts'

/** What the path's id names: a case of one kind, a probe, … — its noun for the 404, and how to look one up. */
export interface PathResource {
  noun: string
  find(db: Queryable, id: string): Promise<unknown>
}

/**
 * Route options for routes on one resource (`/v1/<resources>/:id/…`) that take a body: an unknown id is a 404
 * before the body is judged, so the codes come in the order every route keeps — 401, 403 by role, 404 for the
 * path's id, then 400 for the body. Fastify validates the body before any handler runs, so the validation error
 * is attached instead of thrown, and a `preHandler` looks the resource up only when there is one to report (a
 * valid body costs no extra query: the handler's service finds an unknown id itself). A malformed id is the
 * params schema's 400.
 */
export function caseIdBeforeBody(app: FastifyInstance, resource: PathResource) {
  const idOf = (request: FastifyRequest): string | undefined => {
    const { id } = request.params as { id?: unknown }
    return uuidParam.safeParse(id).success ? (id as string) : undefined
  }
  return {
    attachValidation: true,
    preHandler: async (request: FastifyRequest): Promise<void> => {
      const invalid = request.validationError
      if (!invalid) return
      const id = idOf(request)
      if (id !== undefined) await assertFound(app, resource, id)
      throw invalid
    },
    // A body that is not JSON, or not I-JSON, is refused while it is read, before any hook above: that 400 too
    // waits for the id's 404. The lookup is admitted like a key's (no preHandler, so no admission slot, has run);
    // rethrown, the error reaches the app's own handler.
    errorHandler: async (error: unknown, request: FastifyRequest): Promise<never> => {
      const id = idOf(request)
      if (id !== undefined && isBodyReadingError(error)) {
        await app.withAdmission(() => assertFound(app, resource, id))
      }
      throw error
    },
  }
}

/** The 400s the JSON body parser gives (src/http/plugins/app/json-body.ts): not JSON, or not I-JSON. */
function isBodyReadingError(error: unknown): boolean {
  return error instanceof AppError && (error.error === 'MALFORMED_JSON' || error.error === 'VALIDATION')
}

/**
 * Runs a check that answers after the path's 404 (a 400 for the body, a 403 for speaking for another
 * orchestrator): when it refuses, the resource is looked up first, so an unknown id is still a 404. A check that
 * passes costs no query.
 */
export async function afterPathId(
  app: FastifyInstance,
  resource: PathResource,
  id: string,
  check: () => void,
): Promise<void> {
  try {
    check()
  } catch (refusal) {
    await assertFound(app, resource, id)
    throw refusal
  }
}

async function assertFound(app: FastifyInstance, resource: PathResource, id: string): Promise<void> {
  if ((await resource.find(app.services.db, id)) === undefined) {
    throw new AppError('NOT_FOUND', `no ${resource.noun} ${id}`)
  }
}
