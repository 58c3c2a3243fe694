import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/** One request a receiver got: its Standard Webhooks headers, its body, and when it arrived and ended. */
export interface ReceivedRequest {
  id: string
  timestamp: string
  signature: string
  headers: IncomingMessage['headers']
  body: string
  receivedAt: number
  /** Requests of the same webhook-id in flight when this one arrived (the same delivery attempted twice at once). */
  concurrentSameId: number
}

/** What the receiver does with a request: answer a status (after a delay), or hold it, or drip its body. */
export type Behaviour =
  | { kind: 'status'; status: number; delayMs?: number; body?: string }
  | { kind: 'hang' }
  | { kind: 'slow_body'; status: number; chunkEveryMs: number }

/**
 * A real HTTP receiver on loopback, as an orchestrator would run one: it records every request and answers as
 * `behave` says; `refuse()` closes the port so connections are refused, `accept()` opens it again on the same port.
 */
export class WebhookReceiver {
  readonly requests: ReceivedRequest[] = []
  /** Connections accepted so far. */
  connections = 0
  behave: (request: ReceivedRequest) => Behaviour = () => ({ kind: 'status', status: 204 })
  #server: Server | undefined
  #port = 0
  readonly #sockets = new Set<Socket>()
  readonly #inFlight = new Map<string, number>()
  readonly #waiters: Array<() => void> = []

  static async start(): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver()
    await receiver.accept()
    return receiver
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}/hook`
  }

  async accept(): Promise<void> {
    const server = createServer((req, res) => this.#handle(req, res))
    server.on('connection', (socket) => {
      this.connections += 1
      this.#sockets.add(socket)
      socket.on('close', () => this.#sockets.delete(socket))
    })
    await new Promise<void>((resolve) => server.listen(this.#port, '127.0.0.1', resolve))
    this.#port = (server.address() as AddressInfo).port
    this.#server = server
  }

  /** Stops listening and drops every connection: new attempts are refused. */
  async refuse(): Promise<void> {
    const server = this.#server
    this.#server = undefined
    for (const socket of this.#sockets) socket.destroy()
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  async close(): Promise<void> {
    await this.refuse()
  }

  /** Resolves once `predicate` holds for the requests received (checked at every request). */
  async until(predicate: (requests: ReceivedRequest[]) => boolean): Promise<void> {
    while (!predicate(this.requests)) {
      await new Promise<void>((resolve) => this.#waiters.push(resolve))
    }
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '')
      const inFlight = this.#inFlight.get(id) ?? 0
      this.#inFlight.set(id, inFlight + 1)
      const request: ReceivedRequest = {
        id,
        timestamp: String(req.headers['webhook-timestamp'] ?? ''),
        signature: String(req.headers['webhook-signature'] ?? ''),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
        concurrentSameId: inFlight,
      }
      this.requests.push(request)
      const done = () => this.#inFlight.set(id, (this.#inFlight.get(id) ?? 1) - 1)
      res.on('close', done)
      const behaviour = this.behave(request)
      for (const wake of this.#waiters.splice(0)) wake()
      if (behaviour.kind === 'hang') return
      if (behaviour.kind === 'slow_body') {
        res.writeHead(behaviour.status, { 'content-type': 'text/plain' })
        const timer = setInterval(() => res.write('.'), behaviour.chunkEveryMs)
        res.on('close', () => clearInterval(timer))
        return
      }
      const answer = () => {
        res.writeHead(behaviour.status, { 'content-type': 'text/plain' })
        res.end(behaviour.body ?? '')
      }
      if (behaviour.delayMs) setTimeout(answer, behaviour.delayMs)
      else answer()
    })
  }
}
