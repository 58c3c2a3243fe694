import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'

export interface TargetRequest {
  method: string
  url: string
  headers: IncomingMessage['headers']
}

/** A real local HTTP server standing in for a probe target; it records every request it receives. */
export async function startTarget(
  t: Pick<TestContext, 'after'>,
  handler: (req: IncomingMessage, res: ServerResponse, count: number) => void,
): Promise<{ url: string; requests: TargetRequest[]; server: Server }> {
  const requests: TargetRequest[] = []
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers })
    handler(req, res, requests.length)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, requests, server }
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}
