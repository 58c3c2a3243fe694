import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { buildProblem, sendProblem, toProblem } from '../../errors.ts'

/** Every error leaves as RFC 9457 problem+json; 5xx causes are logged with the request id, never returned. */
async function errorsPlugin(app: FastifyInstance) {
  app.setErrorHandler((err, request, reply) => {
    const problem = toProblem(err, request)
    if (problem.status >= 500) {
      request.log.error({ err }, 'request failed')
    } else {
      request.log.info({ status: problem.status, problem: problem.type }, problem.detail)
    }
    return sendProblem(reply, problem)
  })
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply,
      buildProblem('NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`, {
        instance: request.url,
      }),
    ),
  )
}

export default fp(errorsPlugin, { name: 'arbiter-errors' })
