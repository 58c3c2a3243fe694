import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** The request's slot for the route it matched, read once by `matchedRoute` (src/http/route-classes.ts). */
async function matchedRoutePlugin(app: FastifyInstance) {
  app.decorateRequest('matched', null)
}

export default fp(matchedRoutePlugin, { name: 'arbiter-matched-route' })
