import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { nameRoute, tracingOn } from '../../../tracing/spans.ts'
import { matchedRoute } from '../../route-classes.ts'

/**
 * With tracing on, the HTTP server span is named after the route template it matched (`POST
 * /v1/outcomes/:id/evaluate`, `http.route`), never after the raw path with its ids. With tracing off, no hook.
 */
async function traceRoutePlugin(app: FastifyInstance) {
  if (!tracingOn()) return
  app.addHook('onRequest', async (request) => {
    const { url } = matchedRoute(request)
    if (url !== '') nameRoute(url)
  })
}

export default fp(traceRoutePlugin, { name: 'arbiter-trace-route', dependencies: ['arbiter-matched-route'] })
