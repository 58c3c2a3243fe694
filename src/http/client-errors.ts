import {
  type IncomingMessage,
  maxHeaderSize,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http'
import type { Socket } from 'node:net'
import type { ConnectionError, FastifyInstance } from 'fastify'
import { buildProblem, type Problem } from './errors.ts'

function problemOf(code: string, requestTimeoutMs: number): Problem {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return buildProblem(
      'REQUEST_TIMEOUT',
      `the request (headers and body) did not arrive whole within ${requestTimeoutMs} ms`,
    )
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    return buildProblem(
      'HEADERS_TOO_LARGE',
      `the request's header fields exceed ${maxHeaderSize} bytes in all; send fewer or shorter headers`,
    )
  }
  return buildProblem('MALFORMED_REQUEST', 'the request is not valid HTTP/1.1')
}

/** The latest response on each connection, so a client error can tell whether one is still being written. */
const latestResponse = new WeakMap<Socket, ServerResponse>()

/**
 * Keeps, for each connection of `server`, its latest response (from node's public 'request' event). Installed with
 * `clientErrorHandler` on the same server.
 */
export function trackResponses(server: Server): void {
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    latestResponse.set(request.socket, response)
  })
}

/** Whether a response has begun on `socket` and is not yet wholly written. */
function responseInFlight(socket: Socket): boolean {
  const response = latestResponse.get(socket)
  return response?.headersSent === true && !response.writableFinished
}

/**
 * Answers errors node's HTTP parser meets before fastify sees a request — a request that did not arrive within
 * the request timeout (408), header fields too large (431), broken HTTP (400) — as problem+json, then closes the
 * connection. Nothing is written once a response has begun on the socket: it would corrupt that response (the
 * server must be given to `trackResponses`).
 */
export function clientErrorHandler(requestTimeoutMs: number) {
  return function onClientError(this: FastifyInstance, err: ConnectionError, socket: Socket) {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const problem = problemOf(err.code, requestTimeoutMs)
    this.log.debug({ code: err.code, status: problem.status }, 'client error')
    if (socket.writable && !responseInFlight(socket)) {
      const body = JSON.stringify(problem)
      socket.write(
        `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n` +
          'Content-Type: application/problem+json; charset=utf-8\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\n` +
          'Connection: close\r\n\r\n' +
          body,
      )
    }
    // End rather than destroy: destroying with the client's bytes still unread resets the connection, and the
    // reset can overtake the answer. Whatever the client still sends is dropped until the socket is destroyed.
    if (socket.writable) {
      socket.end()
      setTimeout(() => socket.destroy(), 1000).unref()
    } else socket.destroy(err)
  }
}
