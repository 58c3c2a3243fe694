import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { buildProblem, sendProblem, toProblem } from '../../errors.ts'
import { RouteMethods } from '../../route-methods.ts'

/**
 * Every error leaves as RFC 9457 problem+json; 5xx causes are logged on the request's line, never returned. A request
 * no route matches is answered as soon as its headers are read — 405 with `Allow` when the path exists with other
 * methods, else 404 — so no unknown route waits for, or parses, a body.
 */
async function errorsPlugin(app: FastifyInstance) {
  const routeMethods = new RouteMethods()
  app.addHook('onRoute', (route) => routeMethods.add(route.url, route.method))

  const answerUnrouted = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? ''
    const allowed = routeMethods.allowed(path)
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '))
      return sendProblem(
        reply,
        buildProblem('METHOD_NOT_ALLOWED', `${path} answers ${allowed.join(', ')}, not ${request.method}`, {
          instance: request.url,
        }),
      )
    }
    return sendProblem(
      reply,
      buildProblem('NOT_FOUND', `no route ${request.method} ${path}`, { instance: request.url }),
    )
  }

  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return answerUnrouted(request, reply)
  })
  app.setErrorHandler((err, request, reply) => {
    const problem = toProblem(err, request)
    // The cause of a 5xx goes to the request's log line (with the request id), never to the client.
    return sendProblem(reply, problem, problem.status >= 500 ? err : undefined)
  })
  app.setNotFoundHandler(answerUnrouted)
}

export default fp(errorsPlugin, { name: 'arbiter-errors' })
