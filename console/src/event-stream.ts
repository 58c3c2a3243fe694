import { type SseEvent, SseParser } from './sse-parser.ts'

export type StreamState =
  | { phase: 'connecting'; attempt: number }
  | { phase: 'open' }
  | { phase: 'waiting'; attempt: number; retryAt: number; reason: string }
  | { phase: 'refused'; status: number }
  | { phase: 'stopped' }

export interface EventStreamOptions {
  url: string
  /** Request headers (the Authorization header among them), asked for at each connection. */
  headers: () => Record<string, string>
  /** Resume after this id on the first connection (e.g. the newest item a list already returned). */
  lastEventId: string | null
  onEvent: (event: SseEvent) => void
  onState: (state: StreamState) => void
  /** Delay before the first reconnection; the server's `retry:` replaces it. Doubles per failure up to maxDelayMs. */
  initialDelayMs?: number
  maxDelayMs?: number
  /** Nothing at all (not even a heartbeat) for this long means the connection is dead. */
  idleTimeoutMs?: number
}

/**
 * Server-Sent Events over `fetch`, because `EventSource` cannot send an Authorization header. Reconnects after
 * any failure with exponential backoff and jitter, sending `Last-Event-ID` so the server resumes right after the
 * last event received: nothing is lost or repeated across a reconnect. A 401 or 403 stops it (retrying cannot
 * help).
 */
export class EventStream {
  private controller: AbortController | null = null
  private stopped = false
  private wake: (() => void) | null = null
  private lastId: string | null

  constructor(private readonly options: EventStreamOptions) {
    this.lastId = options.lastEventId
  }

  get lastEventId(): string | null {
    return this.lastId
  }

  start(): void {
    void this.run()
  }

  stop(): void {
    this.stopped = true
    this.controller?.abort()
    this.wake?.()
    this.options.onState({ phase: 'stopped' })
  }

  private async run(): Promise<void> {
    const maxDelay = this.options.maxDelayMs ?? 30_000
    const idleTimeout = this.options.idleTimeoutMs ?? 45_000
    let baseDelay = this.options.initialDelayMs ?? 1_000
    let failures = 0
    while (!this.stopped) {
      const controller = new AbortController()
      this.controller = controller
      let reason = 'the connection closed'
      let idleTimer: ReturnType<typeof setTimeout> | undefined
      const armIdleTimer = () => {
        clearTimeout(idleTimer)
        idleTimer = setTimeout(() => controller.abort(), idleTimeout)
      }
      try {
        this.options.onState({ phase: 'connecting', attempt: failures + 1 })
        armIdleTimer()
        // Typed apart: the feed also runs under Node in tests, whose RequestInit has no `cache` (its fetch takes it).
        const init: RequestInit & { cache?: 'no-store' } = {
          headers: {
            ...this.options.headers(),
            accept: 'text/event-stream',
            ...(this.lastId === null ? {} : { 'last-event-id': this.lastId }),
          },
          cache: 'no-store',
          signal: controller.signal,
        }
        const response = await fetch(this.options.url, init)
        if (response.status === 401 || response.status === 403) {
          clearTimeout(idleTimer)
          this.options.onState({ phase: 'refused', status: response.status })
          return
        }
        if (!response.ok || !response.body) throw new Error(`the server answered ${response.status}`)
        this.options.onState({ phase: 'open' })
        const parser = new SseParser(this.lastId)
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
        for (;;) {
          const { value, done } = await reader.read()
          if (done) break
          armIdleTimer()
          // Any byte from the server (the prelude or a heartbeat included) proves the connection works.
          failures = 0
          for (const event of parser.push(value)) {
            this.lastId = event.lastEventId
            this.options.onEvent(event)
          }
          if (parser.retryMs !== null) baseDelay = parser.retryMs
        }
      } catch (err) {
        if (this.stopped) return
        reason = controller.signal.aborted ? 'no data arrived for too long' : describe(err)
      } finally {
        clearTimeout(idleTimer)
      }
      if (this.stopped) return
      failures += 1
      const ceiling = Math.min(maxDelay, baseDelay * 2 ** (failures - 1))
      // Full jitter in the upper half: many consoles reconnecting after an outage do not arrive in step.
      const delay = Math.round(ceiling / 2 + (Math.random() * ceiling) / 2)
      this.options.onState({ phase: 'waiting', attempt: failures, retryAt: Date.now() + delay, reason })
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay)
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.wake = null
    }
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
