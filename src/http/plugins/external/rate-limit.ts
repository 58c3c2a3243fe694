import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

export interface RateLimitOptions {
  /** Requests per API key per minute; 0 turns limiting off. */
  perMinute: number
}

/** Per API key, after authentication; public routes carry no key and do no work worth limiting. */
async function rateLimitPlugin(app: FastifyInstance, options: RateLimitOptions) {
  if (options.perMinute <= 0) return
  await app.register(rateLimit, {
    global: true,
    hook: 'preHandler',
    max: options.perMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => request.principal?.keyId ?? request.ip,
    allowList: (request) => request.principal === null,
    errorResponseBuilder: (_request, context) => ({
      statusCode: 429,
      message: `rate limit of ${context.max} requests per minute exceeded; retry in ${context.after}`,
    }),
  })
}

export default fp(rateLimitPlugin, { name: 'arbiter-rate-limit' })
