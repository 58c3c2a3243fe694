import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { createApiKey, listKeys, ROLES, revokeKey } from '../../services/keys.ts'
import { problemSchema } from '../errors.ts'
import { decodeCursor, pageOf, pageQuery, toPage } from '../pagination.ts'
import { principalOf } from '../plugins/auth.ts'
import { authProblems, idParams, rfc3339, uuidParam } from '../schemas/common.ts'

const apiKeySchema = z
  .object({
    id: z.uuid(),
    role: z.enum(ROLES),
    orchestrator_ids: z.array(z.string()),
    label: z.string(),
    created_at: z.string(),
    revoked_at: z.string().nullable(),
  })
  .meta({ id: 'ApiKey' })

const createKeyBody = z.strictObject({
  role: z.enum(ROLES),
  orchestrator_ids: z.array(z.string().min(1).max(200)).max(100).optional(),
  label: z.string().min(1).max(200),
})

const keyCursor = z.object({ at: rfc3339, id: uuidParam })

export const keyRoutes: FastifyPluginAsyncZod = async (app) => {
  const admin = { auth: ['admin'] as const }

  app.post(
    '/v1/admin/keys',
    {
      config: admin,
      schema: {
        tags: ['keys'],
        summary: 'Create an API key; the secret is returned only in this response',
        body: createKeyBody,
        response: {
          201: apiKeySchema
            .omit({ revoked_at: true })
            .extend({ key: z.string() })
            .meta({ id: 'CreatedApiKey' }),
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const { revoked_at: _never, ...created } = await createApiKey(
        app.db,
        request.body,
        principalOf(request).keyId,
      )
      return reply.code(201).send(created)
    },
  )

  app.get(
    '/v1/admin/keys',
    {
      config: admin,
      schema: {
        tags: ['keys'],
        summary: 'List API keys (no secrets; revoked keys carry revoked_at)',
        querystring: z.strictObject(pageQuery),
        response: { 200: pageOf(apiKeySchema), ...authProblems },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query
      const after = decodeCursor(cursor, keyCursor)
      const rows = await listKeys(app.db, after ? { at: new Date(after.at), id: after.id } : null, limit + 1)
      return toPage(
        rows,
        limit,
        (row) => row,
        (row) => ({ at: row.created_at, id: row.id }),
      )
    },
  )

  app.delete(
    '/v1/admin/keys/:id',
    {
      config: admin,
      schema: {
        tags: ['keys'],
        summary: 'Revoke a key; it stops working on the next request',
        params: idParams,
        response: { 204: z.null().describe('revoked'), 404: problemSchema, ...authProblems },
      },
    },
    async (request, reply) => {
      await revokeKey(app.db, request.params.id, principalOf(request).keyId)
      return reply.code(204).send(null)
    },
  )
}
