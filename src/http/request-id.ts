import type { IncomingHttpHeaders } from 'node:http'

const CLIENT_REQUEST_ID = /^[\w.:-]{1,128}$/

/**
 * The request id a client sent (`x-request-id`), when it is a sane token: logged as `clientRequestId` beside
 * Arbiter's own id so a caller's traces can be found, never used as the log's request id.
 */
export function clientRequestIdOf(headers: IncomingHttpHeaders): string | undefined {
  const given = headers['x-request-id']
  return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : undefined
}
