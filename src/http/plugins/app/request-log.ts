import { type FastifyInstance, LogController } from 'fastify'
import fp from 'fastify-plugin'
import { problemSent } from '../../errors.ts'
import { logsAt, RequestLogger } from '../../request-logger.ts'
import { isOperationsRoute } from '../../route-classes.ts'

/**
 * One log line per request, when it ends: method, path, status, duration, and — on the request's logger — Arbiter's
 * request id (`reqId`) and the client's own (`clientRequestId`) when it sent one. An error answer adds its problem
 * type and detail, a 5xx its cause. Liveness, readiness and metrics scrapes log at `debug`, everything else at
 * `info` (5xx at `error`). Headers are never logged, so neither is a key.
 */
async function requestLogPlugin(app: FastifyInstance) {
  app.addHook('onResponse', async (request, reply) => {
    const status = reply.statusCode
    const level = status >= 500 ? 'error' : isOperationsRoute(request) ? 'debug' : 'info'
    // At a log level that drops the line (LOG_LEVEL=warn, say), it is not built at all.
    if (!logsAt(request.log, level)) return
    const line: Record<string, unknown> = {
      method: request.method,
      url: request.url.split('?')[0],
      status,
      durationMs: Math.round(reply.elapsedTime * 10) / 10,
    }
    const failed = problemSent(reply)
    if (failed) {
      line.problem = failed.problem.type
      line.detail = failed.problem.detail
      if (failed.err !== undefined) line.err = failed.err
    }
    const message = level === 'error' ? 'request failed' : 'request'
    if (request.log instanceof RequestLogger) request.log.writeLine(level, line, message)
    else request.log[level](line, message)
  })
}

/** Fastify's own per-request lines (on arrival, on completion, on a 404) give way to the one line above. */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(): void {}
  override routeNotFound(): void {}
}

export default fp(requestLogPlugin, { name: 'arbiter-request-log' })
