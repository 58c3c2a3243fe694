import type { FastifyRequest } from 'fastify'

// Matched by route, not raw URL, so no spelling of a path evades the check. Liveness, readiness and metrics
// must answer under load; the manifest stream is long-lived and would hold an admission slot for good.
const OPERATIONS_ROUTES = new Set(['/healthz', '/readyz', '/metrics'])
const STREAM_ROUTES = new Set(['/v1/manifests/stream'])

const routeOf = (request: FastifyRequest) => request.routeOptions.url ?? ''

/** Liveness, readiness and metrics: never shed, so operators can see an overloaded service. */
export const isOperationsRoute = (request: FastifyRequest) => OPERATIONS_ROUTES.has(routeOf(request))

/** Routes that hold no admission slot: operations, and long-lived streams. */
export const isUncountedRoute = (request: FastifyRequest) =>
  isOperationsRoute(request) || STREAM_ROUTES.has(routeOf(request))
