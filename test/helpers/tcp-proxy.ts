import { once } from 'node:events'
import net from 'node:net'

/**
 * A TCP proxy between the app and its database, so a test can take the database away without stopping a
 * server other test files share. `cut()` destroys every proxied connection and refuses new ones (each is
 * accepted and reset at once, as a crashed or restarting server would); `restore()` forwards again.
 */
export interface TcpProxy {
  /** The port the proxy listens on, on 127.0.0.1. */
  port: number
  /** `connectionString` with its host and port replaced by the proxy's. */
  proxiedUrl(connectionString: string): string
  cut(): void
  restore(): void
  readonly isCut: boolean
  /** Connections accepted so far (forwarded or refused), and open right now. */
  stats(): { accepted: number; refused: number; open: number }
  close(): Promise<void>
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>()
  let cut = false
  let accepted = 0
  let refused = 0
  const server = net.createServer((client) => {
    accepted += 1
    if (cut) {
      refused += 1
      client.resetAndDestroy()
      return
    }
    const upstream = net.connect(target.port, target.host)
    const pair = { client, upstream }
    pairs.add(pair)
    const teardown = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on('error', teardown)
    upstream.on('error', teardown)
    client.on('close', teardown)
    upstream.on('close', teardown)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = (server.address() as net.AddressInfo).port
  const destroyAll = () => {
    for (const { client, upstream } of pairs) {
      // A reset, not a polite FIN: the app sees the connection die as it would when the database crashes.
      if (!client.destroyed) client.resetAndDestroy()
      upstream.destroy()
    }
    pairs.clear()
  }
  return {
    port,
    proxiedUrl(connectionString) {
      const url = new URL(connectionString)
      url.hostname = '127.0.0.1'
      url.port = String(port)
      return url.toString()
    },
    cut() {
      cut = true
      destroyAll()
    },
    restore() {
      cut = false
    },
    get isCut() {
      return cut
    },
    stats: () => ({ accepted, refused, open: pairs.size }),
    async close() {
      cut = true
      destroyAll()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
