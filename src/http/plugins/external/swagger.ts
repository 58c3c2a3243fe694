import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod'

/** The OpenAPI document, generated from the routes' zod schemas, and its viewer at /docs. */
async function swaggerPlugin(app: FastifyInstance) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Arbiter',
        version: '0.1.0',
        description:
          'Settles disagreements between AI orchestrators sharing a sub-agent: evidence, interpretations, a written decision procedure, ground-truth probes and one signed manifest.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
}

export default fp(swaggerPlugin, { name: 'arbiter-swagger' })
