import type { ServerResponse } from 'node:http'
import { latestManifestSeq, listManifests } from '../db/repositories/manifests.ts'
import type { ServiceContext } from '../services/context.ts'
import { envelopeText } from './manifests.ts'

interface Subscriber {
  raw: ServerResponse
  /** audit_seq of the last manifest this client was sent. */
  cursor: number
  busy: boolean
  /** Set while the socket's buffer is full; the client is skipped (and holds nothing) until it drains. */
  blockedSince: number | null
}

export interface FeedOptions {
  pollMs: number
  heartbeatMs: number
  /** A client whose buffer stays full this long is disconnected. */
  stallLimitMs: number
  onError: (err: unknown) => void
}

const BATCH = 100

/**
 * Server-Sent Events for GET /v1/manifests/stream. Polls the manifests table instead of LISTEN/NOTIFY: a LISTEN
 * connection would be held for good (and the embedded database serves one at a time). Each tick asks for the
 * newest seq once; only clients behind it query, each with a short pooled query, so a slow client never holds a
 * database connection — while its socket is full it is simply skipped.
 */
export class ManifestFeed {
  private readonly subscribers = new Set<Subscriber>()
  private pollTimer: NodeJS.Timeout | null = null
  private heartbeatTimer: NodeJS.Timeout | null = null
  private polling = false

  constructor(
    private readonly ctx: Pick<ServiceContext, 'db'>,
    private readonly options: FeedOptions,
  ) {}

  async subscribe(raw: ServerResponse, lastEventId: number | null): Promise<void> {
    const cursor = lastEventId ?? (await latestManifestSeq(this.ctx.db))
    const subscriber: Subscriber = { raw, cursor, busy: false, blockedSince: null }
    this.subscribers.add(subscriber)
    raw.on('close', () => this.subscribers.delete(subscriber))
    raw.on('drain', () => {
      subscriber.blockedSince = null
    })
    this.ensureTimers()
    // Catch up at once rather than at the next tick.
    void this.deliver(subscriber, Number.POSITIVE_INFINITY)
  }

  /** New manifests may be there: look now instead of at the next tick. */
  poke(): void {
    if (this.subscribers.size > 0) void this.poll()
  }

  get size(): number {
    return this.subscribers.size
  }

  close(): void {
    for (const subscriber of this.subscribers) subscriber.raw.end()
    this.subscribers.clear()
    this.stopTimers()
  }

  private ensureTimers(): void {
    if (!this.pollTimer) {
      this.pollTimer = setInterval(() => void this.poll(), this.options.pollMs)
      this.pollTimer.unref()
    }
    if (!this.heartbeatTimer) {
      this.heartbeatTimer = setInterval(() => this.heartbeat(), this.options.heartbeatMs)
      this.heartbeatTimer.unref()
    }
  }

  private stopTimers(): void {
    if (this.pollTimer) clearInterval(this.pollTimer)
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer)
    this.pollTimer = null
    this.heartbeatTimer = null
  }

  private heartbeat(): void {
    const now = Date.now()
    for (const subscriber of this.subscribers) {
      if (subscriber.blockedSince !== null && now - subscriber.blockedSince > this.options.stallLimitMs) {
        subscriber.raw.destroy()
        this.subscribers.delete(subscriber)
        continue
      }
      if (subscriber.blockedSince === null) subscriber.raw.write(': heartbeat\n\n')
    }
    if (this.subscribers.size === 0) this.stopTimers()
  }

  private async poll(): Promise<void> {
    if (this.polling || this.subscribers.size === 0) return
    this.polling = true
    try {
      const latest = await latestManifestSeq(this.ctx.db)
      await Promise.all([...this.subscribers].map((subscriber) => this.deliver(subscriber, latest)))
    } catch (err) {
      this.options.onError(err)
    } finally {
      this.polling = false
    }
  }

  private async deliver(subscriber: Subscriber, latest: number): Promise<void> {
    if (subscriber.busy || subscriber.blockedSince !== null || subscriber.cursor >= latest) return
    subscriber.busy = true
    try {
      for (;;) {
        const rows = await listManifests(this.ctx.db, { afterSeq: subscriber.cursor }, BATCH)
        for (const row of rows) {
          if (!this.subscribers.has(subscriber)) return
          const envelope = envelopeText(row)
          const flushed = subscriber.raw.write(`event: manifest\nid: ${row.audit_seq}\ndata: ${envelope}\n\n`)
          subscriber.cursor = row.audit_seq ?? subscriber.cursor
          if (!flushed) {
            subscriber.blockedSince = Date.now()
            return
          }
        }
        if (rows.length < BATCH) return
      }
    } catch (err) {
      this.options.onError(err)
    } finally {
      subscriber.busy = false
    }
  }
}
