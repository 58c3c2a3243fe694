import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../../../errors.ts'

/**
 * Every answer names its request (`x-request-id`: Arbiter's own id, the one its log line carries); an answer given
 * before the request's body arrived (401, 404, 405, …) closes the connection rather than wait for the rest of it;
 * and query strings are refused when they hold U+0000: they filter text columns, where NUL can never match and
 * PostgreSQL refuses it.
 */
async function requestGuardsPlugin(app: FastifyInstance) {
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id)
    const hasBody =
      request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0
    if (hasBody && !request.raw.complete) reply.header('connection', 'close')
  })
  app.addHook('preValidation', async (request) => {
    const query = request.query as Record<string, unknown> | undefined
    for (const [name, value] of Object.entries(query ?? {})) {
      if (
        (Array.isArray(value) ? value : [value]).some((v) => typeof v === 'string' && v.includes('\u0000'))
      ) {
        throw new AppError('VALIDATION', `querystring/${name}: must not contain U+0000`, {}, [
          { path: `querystring/${name}`, message: 'must not contain U+0000' },
        ])
      }
    }
  })
}

export default fp(requestGuardsPlugin, { name: 'arbiter-request-guards' })
