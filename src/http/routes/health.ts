import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { checkReadiness } from '../../services/readiness.ts'
import { problemSchema } from '../errors.ts'

/** Operations: liveness, readiness, metrics and the OpenAPI document, all without a key. */
export const healthRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/healthz',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['operations'],
        summary: 'The process is up',
        response: { 200: z.object({ status: z.literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  )

  app.get(
    '/readyz',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['operations'],
        summary: 'The database is reachable and every migration is applied',
        response: { 200: z.object({ status: z.literal('ready') }), 503: problemSchema },
      },
    },
    async () => {
      await checkReadiness(app.services)
      return { status: 'ready' as const }
    },
  )

  app.get(
    '/metrics',
    {
      config: { auth: 'public' },
      schema: { tags: ['operations'], summary: 'Prometheus metrics', hide: true },
    },
    async (_request, reply) => {
      reply.type(app.metrics.registry.contentType)
      return app.metrics.registry.metrics()
    },
  )

  app.get('/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () => app.swagger())
}
