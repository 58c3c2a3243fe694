import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface ReceivedRequest {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
  /** performance.now() when the request arrived. */
  at: number
  /** Date.now() when the request arrived (for HTTP dates, which are wall-clock times). */
  wallAt: number
}

export interface ScriptedServer {
  baseUrl: string
  /** Every request received so far, in order. */
  requests: ReceivedRequest[]
  close(): Promise<void>
}

/**
 * A real HTTP server on 127.0.0.1 that answers the n-th request (0-based) with `script(n, request, response)`, so a
 * test controls exactly what the client sees: 503s with Retry-After, slow answers, dropped connections.
 */
export async function startScriptedServer(
  script: (n: number, request: ReceivedRequest, response: ServerResponse) => void | Promise<void>,
): Promise<ScriptedServer> {
  const requests: ReceivedRequest[] = []
  const sockets = new Set<Socket>()
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const received: ReceivedRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      at: performance.now(),
      wallAt: Date.now(),
    }
    const n = requests.push(received) - 1
    await script(n, received, res)
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const contentType = status >= 400 ? 'application/problem+json' : 'application/json'
  response.writeHead(status, { 'content-type': contentType, ...headers })
  response.end(JSON.stringify(body))
}

export function problem(status: number, title: string, extra: Record<string, unknown> = {}) {
  return { type: `urn:test:${status}`, title, status, detail: `${title} (scripted)`, ...extra }
}
