import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { ROLES } from '../../domain/vocabulary.ts'
import { type ApiKeyView, createApiKey, pageKeys, revokeKey } from '../../services/keys.ts'
import { problemSchema } from '../errors.ts'
import { apiKeyExample, createdKeyExample, createKeyExample } from '../examples.ts'
import { principalOf } from '../plugins/app/auth.ts'
import { answerMade, routeOptions } from '../route-options.ts'
import { authProblems, idParams, pageOf, pageQuery } from '../schemas/common.ts'

const apiKeySchema = z
  .object({
    id: z.uuid(),
    role: z.enum(ROLES),
    orchestrator_ids: z.array(z.string()),
    label: z.string(),
    created_at: z.string(),
    revoked_at: z.string().nullable(),
  })
  .meta({ id: 'ApiKey', examples: [apiKeyExample] }) satisfies z.ZodType<ApiKeyView>

const createKeyBody = z
  .strictObject({
    role: z.enum(ROLES),
    orchestrator_ids: z.array(z.string().min(1).max(200)).max(100).optional(),
    label: z.string().min(1).max(200),
  })
  .meta({ examples: [createKeyExample] })

/** The key routes' options: admin only, in the `keys` group. */
const keysRoute = <Schema extends object>(summary: string, schema: Schema) =>
  routeOptions(['admin'], { tag: 'keys', summary }, schema)

export const keyRoutes: FastifyPluginAsyncZod = async (app) => {
  // Made with the routes: its OpenAPI component takes its place among the routes' own.
  const createdKeySchema = apiKeySchema
    .omit({ revoked_at: true })
    .extend({ key: z.string() })
    .meta({ id: 'CreatedApiKey', examples: [createdKeyExample] })

  app.post(
    '/v1/admin/keys',
    keysRoute('Create an API key; the secret is returned only in this response', {
      body: createKeyBody,
      response: { 201: createdKeySchema, ...authProblems },
    }),
    answerMade((body: z.infer<typeof createKeyBody>, actor) => createApiKey(app.services, body, actor)),
  )

  app.get(
    '/v1/admin/keys',
    keysRoute('List API keys (no secrets; revoked keys carry revoked_at)', {
      querystring: z.strictObject(pageQuery),
      response: { 200: pageOf(apiKeySchema), ...authProblems },
    }),
    async (request) => pageKeys(app.services, request.query),
  )

  app.delete(
    '/v1/admin/keys/:id',
    keysRoute('Revoke a key; it stops working on the next request', {
      params: idParams,
      response: { 204: z.null().describe('revoked'), 404: problemSchema, ...authProblems },
    }),
    async (request, reply) => {
      await revokeKey(app.services, request.params.id, principalOf(request).keyId)
      return reply.code(204).send(null)
    },
  )
}
