import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { createMetrics, type Metrics } from '../../../metrics.ts'
import { matchedRoute } from '../../route-classes.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Prometheus metrics of this app (request latency, manifests, probes, pool). */
    metrics: Metrics
  }
}

/** Decorates `metrics` and times every request by matched route. */
async function metricsPlugin(app: FastifyInstance) {
  const metrics = createMetrics(app.db)
  app.decorate('metrics', metrics)
  app.addHook('onResponse', async (request, reply) => {
    // Unknown routes share one label so scanners cannot blow up the label space.
    const route = request.is404 ? 'unmatched' : matchedRoute(request).url || 'unmatched'
    metrics.requestDuration.observe(
      { method: request.method, route, status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    )
  })
}

export default fp(metricsPlugin, { name: 'arbiter-metrics', dependencies: ['arbiter-db'] })
