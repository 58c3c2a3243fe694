import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { CaseKindModule } from '../../case-kinds.ts'
import { finishOpenApiDocument, PUBLIC_PAGES } from '../../openapi-document.ts'

/** Arbiter's mark (the console's icon: a balance), for the tab of the docs page. */
export const ARBITER_ICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" role="img" aria-label="Arbiter"><title>Arbiter</title><rect width="32" height="32" rx="6" fill="#1e3a8a"/><path d="M16 5v22M7 11h18M7 11l-3 8h6zM25 11l-3 8h6zM11 27h10" stroke="#fff" stroke-width="2" fill="none" stroke-linejoin="round"/></svg>'

/**
 * The mark and the name, for the top bar of the docs page. Swagger UI shows it as an image from a data: URL, so
 * no inline script or style is added to the page.
 */
export const ARBITER_LOGO =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 210 40" width="210" height="40" role="img" aria-label="Arbiter API"><title>Arbiter API</title><rect x="4" y="4" width="32" height="32" rx="6" fill="#1e3a8a"/><path d="M20 9v22M11 15h18M11 15l-3 8h6zM29 15l-3 8h6zM15 31h10" stroke="#fff" stroke-width="2" fill="none" stroke-linejoin="round"/><text x="46" y="28" font-family="system-ui, sans-serif" font-size="22" font-weight="600" fill="#fff">Arbiter API</text></svg>'

type TransformInput = Parameters<typeof jsonSchemaTransform>[0] & {
  route: { method: string | string[]; config?: { auth?: unknown } }
}

/**
 * Each route's schema as the document shows it: zod schemas converted, public routes marked as needing no key
 * (`security: []`), and the public pages that have no zod schema described from PUBLIC_PAGES.
 */
function transformRoute(input: TransformInput) {
  // @fastify/swagger-ui registers its page as `/docs/`; fastify answers it at `/docs` too.
  const url = input.url.replace(/(.)\/$/, '$1')
  const page = PUBLIC_PAGES[url]
  if (page && input.route.method === 'GET') return { schema: { ...page, security: [] }, url }
  const result = jsonSchemaTransform(input)
  const schema = withRootExamples(
    input.schema as ZodRouteSchema | undefined,
    result.schema as JsonRouteSchema,
  )
  const isPublic = input.route.config?.auth === 'public'
  return { ...result, schema: isPublic ? { ...schema, security: [] } : schema }
}

type ZodRouteSchema = { body?: unknown; response?: Record<string, unknown> }
type JsonRouteSchema = { body?: Record<string, unknown>; response?: Record<string, Record<string, unknown>> }

/** Adds the `examples` a route's own body or answer schema carries, when it is not a component of its own. */
function withExamples(zodSchema: unknown, json: Record<string, unknown> | undefined) {
  if (!(zodSchema instanceof z.ZodType) || json === undefined || '$ref' in json || 'examples' in json)
    return json
  const examples = z.globalRegistry.get(zodSchema)?.examples
  return examples ? { ...json, examples } : json
}

/**
 * The converter writes the metadata of every schema but the one at the root of a body or an answer, so examples
 * given there (`schema.meta({ examples })`) would not reach the document: they are added back here.
 */
function withRootExamples(zodSchema: ZodRouteSchema | undefined, json: JsonRouteSchema): JsonRouteSchema {
  if (!zodSchema || !json) return json
  const response = json.response
    ? Object.fromEntries(
        Object.entries(json.response).map(([status, answer]) => [
          status,
          withExamples(zodSchema.response?.[status], answer) ?? answer,
        ]),
      )
    : undefined
  return {
    ...json,
    ...(json.body ? { body: withExamples(zodSchema.body, json.body) } : {}),
    ...(response ? { response } : {}),
  }
}

/** The OpenAPI document, generated from the routes' zod schemas, and its viewer at /docs. */
async function swaggerPlugin(app: FastifyInstance, options: { kinds: readonly CaseKindModule[] }) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Arbiter',
        version: '0.1.0',
        description:
          'Settles disagreements between AI orchestrators sharing a sub-agent: evidence, interpretations, a written decision procedure, ground-truth probes and one signed manifest. Errors are RFC 9457 problem+json.',
      },
      servers: [{ url: '/', description: 'The Arbiter serving this document' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: (input) => transformRoute(input as TransformInput),
    transformObject: (input) => finishOpenApiDocument(jsonSchemaTransformObject(input), options.kinds),
  })
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    logo: { type: 'image/svg+xml', content: ARBITER_LOGO, href: '/docs', target: '_self' },
    theme: {
      title: 'Arbiter API',
      favicon: [
        { filename: 'arbiter.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: ARBITER_ICON },
      ],
    },
  })
}

export default fp(swaggerPlugin, { name: 'arbiter-swagger' })
