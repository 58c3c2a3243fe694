import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { nameRoute, tracingOn } from '../../../tracing/spans.ts'

/**
 * With tracing on, the HTTP server span is named after the route template it matched (`POST
 * /v1/outcomes/:id/evaluate`, `http.route`), never after the raw path with its ids. With tracing off, no hook.
 */
async function traceRoutePlugin(app: FastifyInstance) {
  if (!tracingOn()) return
  app.addHook('onRequest', async (request) => {
    const route = request.routeOptions.url
    if (route !== undefined) nameRoute(route)
  })
}

export default fp(traceRoutePlugin, { name: 'arbiter-trace-route' })
