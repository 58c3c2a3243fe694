import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { type Migration, pendingMigrationCount } from '../../db/migrate.ts'
import { AppError } from '../../errors.ts'
import { problemSchema } from '../errors.ts'

export const healthRoutes: FastifyPluginAsyncZod<{ migrations: Migration[] }> = async (
  app,
  { migrations },
) => {
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
      const pending = await pendingMigrationCount(app.db, migrations)
      if (pending > 0) throw new AppError('DATABASE_UNAVAILABLE', `${pending} migration(s) not applied yet`)
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
}
