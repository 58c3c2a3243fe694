import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A local OTLP/HTTP receiver for BENCH_TRACING=1: it takes every export the measured Arbiter sends (reading the
 * whole body, as a collector does) and answers 200, counting requests and bytes. What a collector does with the
 * spans afterwards is not Arbiter's cost.
 */
export async function startOtlpSink(): Promise<{
  endpoint: string
  stats: () => { requests: number; bytes: number }
  stop: () => Promise<void>
}> {
  let requests = 0
  let bytes = 0
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length
    })
    req.on('end', () => {
      requests += 1
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stats: () => ({ requests, bytes }),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
