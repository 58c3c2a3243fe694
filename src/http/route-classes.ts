import type { FastifyContextConfig, FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyRequest {
    /** The route the request matched, read once (`matchedRoute`). Null until first asked for. */
    matched: MatchedRoute | null
  }
}

/** What the app's hooks ask of the route a request matched. */
export interface MatchedRoute {
  /** The route's path pattern (`/v1/outcomes/:outcomeId`); empty for a request no route matched. */
  url: string
  config: FastifyContextConfig
}

/**
 * The request's route, read from fastify once per request: `request.routeOptions` builds a new object on every
 * access, and the auth, admission, metrics and request-log hooks each ask. (`src/http/plugins/app/matched-route.ts`
 * declares the request's slot for it.)
 */
export function matchedRoute(request: FastifyRequest): MatchedRoute {
  let matched = request.matched
  if (matched === null) {
    const options = request.routeOptions
    matched = { url: options.url ?? '', config: options.config }
    request.matched = matched
  }
  return matched
}

// Matched by route, not raw URL, so no spelling of a path evades the check. Liveness, readiness and metrics
// must answer under load; the manifest stream is long-lived and would hold an admission slot for good.
const OPERATIONS_ROUTES = new Set(['/healthz', '/readyz', '/metrics'])
const STREAM_ROUTES = new Set(['/v1/manifests/stream'])

/** Liveness, readiness and metrics: never shed, so operators can see an overloaded service. */
export const isOperationsRoute = (request: FastifyRequest) => OPERATIONS_ROUTES.has(matchedRoute(request).url)

/** Routes that hold no admission slot: operations, and long-lived streams. */
export const isUncountedRoute = (request: FastifyRequest) => {
  const { url } = matchedRoute(request)
  return OPERATIONS_ROUTES.has(url) || STREAM_ROUTES.has(url)
}
