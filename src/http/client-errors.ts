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

/**
 * Responses not yet wholly written, per connection. With pipelining a connection can hold several at once: one
 * being written and others queued behind it, so the latest alone does not tell whether one is under way.
 */
const unfinished = new WeakMap<Socket, Set<ServerResponse>>()

/**
 * Keeps, for each connection of `server`, its responses not yet wholly written (from node's public 'request' event
 * and each response's 'finish' or 'close'). Installed with `clientErrorHandler` on the same server.
 */
export function trackResponses(server: Server): void {
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket
    let responses = unfinished.get(socket)
    if (!responses) {
      responses = new Set()
      unfinished.set(socket, responses)
    }
    responses.add(response)
    const settle = () => {
      responses.delete(response)
      if (responses.size === 0 && unfinished.get(socket) === responses) unfinished.delete(socket)
    }
    response.once('finish', settle)
    response.once('close', settle)
  })
}

/**
 * Whether a response on `socket` has begun and is not yet wholly written. One not begun (a request whose body is
 * still arriving) does not count: nothing of it is on the wire, and the connection is closed after the answer.
 */
function responseInFlight(socket: Socket): boolean {
  for (const response of unfinished.get(socket) ?? []) if (response.headersSent) return true
  return false
}

/**
 * Answers errors node's HTTP parser meets before fastify sees a request — a request that did not arrive within
 * the request timeout (408), header fields too large (431), broken HTTP (400) — as problem+json, then closes the
 * connection. Nothing is written while a response on the socket is under way: it would land inside that response
 * (the server must be given to `trackResponses`).
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
