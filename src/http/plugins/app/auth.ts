import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Role } from '../../../domain/vocabulary.ts'
import { AppError } from '../../../errors.ts'
import { authenticate, authenticateFromCache, type Principal } from '../../../services/keys.ts'
import { AuthFailureThrottle } from '../../auth-failure-throttle.ts'
import { matchedRoute } from '../../route-classes.ts'

export { assertMaySpeakFor } from '../../../services/keys.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `'public'` for routes anyone may call; otherwise the roles allowed (default: admin only). */
    auth?: 'public' | readonly Role[]
  }
  interface FastifyRequest {
    /** The caller, resolved from its bearer key; null on public routes. */
    principal: Principal | null
  }
}

/** Unknown or revoked keys per client address per minute before 429, unless the app is configured otherwise. */
export const DEFAULT_AUTH_FAILURES_PER_MINUTE = 60

const BEARER = /^Bearer\s+(\S+)\s*$/i

// Routes registered by @fastify/swagger-ui, which cannot carry our route config: the docs are public.
const PUBLIC_PREFIXES = ['/docs']
function isPublicPrefix(url: string): boolean {
  for (const prefix of PUBLIC_PREFIXES) if (url === prefix || url.startsWith(`${prefix}/`)) return true
  return false
}

/**
 * Authenticates every request in `onRequest`, before the body is read: an unauthenticated client cannot make
 * the service parse a large body. Routes opt out only by declaring `config: { auth: 'public' }`. An address that
 * keeps presenting unknown or revoked keys is answered 429 (src/http/auth-failure-throttle.ts), and from then on
 * until its minute ends only keys in the key cache are let through, with no database lookup.
 */
async function authPlugin(app: FastifyInstance) {
  app.decorateRequest('principal', null)
  const failures = new AuthFailureThrottle(
    app.config.authFailuresPerMinute ?? DEFAULT_AUTH_FAILURES_PER_MINUTE,
  )
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.is404) return
    const route = matchedRoute(request)
    const auth = isPublicPrefix(route.url) ? 'public' : (route.config.auth ?? (['admin'] as const))
    if (auth === 'public') return
    const header = request.headers.authorization
    const match = header ? BEARER.exec(header) : null
    if (!match) {
      reply.header('www-authenticate', 'Bearer')
      throw new AppError('UNAUTHORIZED', 'send an API key as "Authorization: Bearer <key>"')
    }
    const secret = match[1]!
    // An address that has used up its failures costs the database nothing more: its keys are answered from the
    // key cache alone, so a valid key used recently still works and every guess gets 429 without a lookup.
    const throttledFor = failures.retryAfter(request.ip)
    const principal =
      throttledFor === null
        ? // The key's lookup counts towards admission while it runs; the slot is given back before any body is read.
          await app.withAdmission(() => authenticate(app.services, secret))
        : authenticateFromCache(app.services, secret)
    if (!principal) {
      // A missing or malformed header costs no lookup and is not counted; a key that is unknown or revoked is.
      const retryAfter = throttledFor ?? failures.fail(request.ip)
      if (retryAfter !== null) {
        reply.header('retry-after', String(retryAfter))
        throw new AppError(
          'RATE_LIMITED',
          'too many unknown or revoked API keys from this address; retry after Retry-After seconds',
        )
      }
      reply.header('www-authenticate', 'Bearer error="invalid_token"')
      throw new AppError('UNAUTHORIZED', 'the API key is unknown or revoked')
    }
    request.principal = principal
    if (!auth.includes(principal.role)) {
      throw new AppError('FORBIDDEN', `role ${principal.role} may not ${request.method} ${route.url}`)
    }
  })
}

export default fp(authPlugin, {
  name: 'arbiter-auth',
  dependencies: ['arbiter-services', 'arbiter-admission'],
})

/** The principal of an authenticated route (the auth hook guarantees it is set). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError('UNAUTHORIZED', 'authentication required')
  return request.principal
}
