import type { ServerResponse } from 'node:http'
import { revokedApiKeyIds } from '../db/repositories/api-keys.ts'
import { latestManifestSeq, manifestsPage } from '../db/repositories/manifests.ts'
import { queryOne, queryRows } from '../db/statement.ts'
import { utf8OfPieces } from '../domain/shared/utf8-pieces.ts'
import { AppError } from '../errors.ts'
import type { ServiceContext } from '../services/context.ts'
import { envelopePieces } from './manifests.ts'

/** One open stream: from its admission until it closes. */
interface Stream {
  keyId: string
  /** Set once the response is ready for events; null while the stream is being opened. */
  raw: ServerResponse | null
  /** audit_seq of the last manifest this client was sent. */
  cursor: number
  /** Set while the socket's buffer is full; the client is skipped (and holds nothing) until it drains. */
  blockedSince: number | null
  /** Its key was revoked while the stream was being opened. */
  revoked: boolean
}

export interface FeedOptions {
  pollMs: number
  heartbeatMs: number
  /** A client whose buffer stays full this long is disconnected. */
  stallLimitMs: number
  /** Open streams per API key; one more → 429. */
  maxStreamsPerKey: number
  /** Open streams on this replica; one more → 503. */
  maxStreams: number
  onError: (err: unknown) => void
  /** Called for each page of manifests read (whatever the number of streams it is written to). */
  onPageRead?: () => void
}

/** Manifests read per page while streams catch up (fewer once they come to a list page's byte bound). */
const BATCH = 100
/** What a refused stream is told to wait before it tries again (seconds, Retry-After). */
export const STREAM_RETRY_AFTER_SECONDS = 5
/** How long a revoked key's stream may take to flush its last bytes before its socket is destroyed. */
const REVOKED_STREAM_GRACE_MS = 500

/**
 * A stream's admission: `open` makes it receive events; `release` gives its slot back (when the response closes,
 * or if it never opens).
 */
export interface StreamTicket {
  open(raw: ServerResponse, lastEventId: number | null): Promise<void>
  release(): void
}

/**
 * Server-Sent Events for GET /v1/manifests/stream. Polls the manifests table instead of LISTEN/NOTIFY: a LISTEN
 * connection would be held for good (and the embedded database serves one at a time).
 *
 * One pump delivers to every stream, one page of manifests at a time: it reads the page after the lowest cursor
 * among the streams that are behind, writes each event, encoded once, to every stream at that cursor, and goes on
 * until none is behind. So the feed holds at most one page (a list page's bounds: BATCH manifests or about 4 MiB)
 * however many streams replay from however far back, and a thousand live streams share one read and one copy of
 * each event. A client whose socket is full is skipped (it holds only what it was already written) and dropped if
 * it stays full; a slow client never holds a database connection.
 *
 * Streams are bounded per key and per replica, and a revoked key's streams close as soon as this replica hears
 * of the revocation (see KeyCache.onRevoked).
 */
export class ManifestFeed {
  private readonly streams = new Set<Stream>()
  private readonly perKey = new Map<string, number>()
  private pollTimer: NodeJS.Timeout | null = null
  private heartbeatTimer: NodeJS.Timeout | null = null
  private pumping = false
  private pumpAgain = false
  /** Set by close(): a stream still being opened then ends instead (it would hold the server's close forever). */
  private closed = false

  constructor(
    private readonly ctx: Pick<ServiceContext, 'db'>,
    private readonly options: FeedOptions,
  ) {}

  /**
   * Admits a stream of `keyId`, or refuses it: 429 past the key's streams, 503 past this replica's. The slot is
   * taken at once, so concurrent opens cannot pass the bounds together.
   */
  admit(keyId: string): StreamTicket {
    if (this.closed || this.streams.size >= this.options.maxStreams) {
      throw new AppError(
        'OVERLOADED',
        `this replica serves ${this.options.maxStreams} manifest streams already; retry later`,
      )
    }
    const held = this.perKey.get(keyId) ?? 0
    if (held >= this.options.maxStreamsPerKey) {
      throw new AppError(
        'RATE_LIMITED',
        `this key has ${this.options.maxStreamsPerKey} manifest streams open already; close one first`,
      )
    }
    const stream: Stream = { keyId, raw: null, cursor: 0, blockedSince: null, revoked: false }
    this.streams.add(stream)
    this.perKey.set(keyId, held + 1)
    let released = false
    const release = () => {
      if (released) return
      released = true
      this.streams.delete(stream)
      const left = (this.perKey.get(keyId) ?? 1) - 1
      if (left > 0) this.perKey.set(keyId, left)
      else this.perKey.delete(keyId)
      if (this.streams.size === 0) this.stopTimers()
    }
    return {
      release,
      open: async (raw, lastEventId) => {
        if (released) return
        stream.cursor = lastEventId ?? (await queryOne(this.ctx.db, latestManifestSeq())).seq ?? 0
        if (stream.revoked || released || this.closed) {
          raw.end()
          release()
          return
        }
        stream.raw = raw
        raw.on('drain', () => {
          stream.blockedSince = null
          this.wake()
        })
        this.ensureTimers()
        // Catch up at once rather than at the next tick.
        this.wake()
      },
    }
  }

  /** New manifests may be there: look now instead of at the next tick. */
  poke(): void {
    if (this.streams.size > 0) this.wake()
  }

  /**
   * `keyId` was revoked: its streams end now. Null: a key was revoked without being named (an announcement from
   * a replica of an earlier version); the keys of the open streams are read again.
   */
  keyRevoked(keyId: string | null): void {
    if (keyId !== null) {
      this.closeStreamsOf(new Set([keyId]))
      return
    }
    const keyIds = [...this.perKey.keys()]
    if (keyIds.length === 0) return
    queryRows(this.ctx.db, revokedApiKeyIds(keyIds)).then(
      (revoked) => this.closeStreamsOf(new Set(revoked.map((row) => row.id))),
      (err) => this.options.onError(err),
    )
  }

  /** Open streams (those being opened included). */
  get size(): number {
    return this.streams.size
  }

  close(): void {
    this.closed = true
    for (const stream of this.streams) stream.raw?.end()
    this.streams.clear()
    this.perKey.clear()
    this.stopTimers()
  }

  private closeStreamsOf(keyIds: Set<string>): void {
    for (const stream of this.streams) {
      if (!keyIds.has(stream.keyId)) continue
      stream.revoked = true
      // end() flushes what was written; the 'close' event gives the slot back. A client that stops reading would
      // hold the socket open until the stall limit: it is cut off shortly after.
      const raw = stream.raw
      raw?.end()
      if (raw) setTimeout(() => raw.destroy(), REVOKED_STREAM_GRACE_MS).unref()
    }
  }

  private ensureTimers(): void {
    if (!this.pollTimer) {
      this.pollTimer = setInterval(() => this.wake(), this.options.pollMs)
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
    for (const stream of this.streams) {
      const raw = stream.raw
      if (!raw) continue
      if (stream.blockedSince !== null && now - stream.blockedSince > this.options.stallLimitMs) {
        raw.destroy()
        continue
      }
      if (stream.blockedSince === null) raw.write(': heartbeat\n\n')
    }
  }

  /** Runs the pump, or has the running one go round once more. */
  private wake(): void {
    if (this.pumping) {
      this.pumpAgain = true
      return
    }
    void this.pump()
  }

  private async pump(): Promise<void> {
    this.pumping = true
    try {
      do {
        this.pumpAgain = false
        if (this.streams.size === 0) return
        const latest = (await queryOne(this.ctx.db, latestManifestSeq())).seq ?? 0
        for (;;) {
          const behind = this.readyStreamsBehind(latest)
          if (behind.length === 0) break
          const cursor = Math.min(...behind.map((stream) => stream.cursor))
          const group = behind.filter((stream) => stream.cursor === cursor)
          const rows = await queryRows(this.ctx.db, manifestsPage({ afterSeq: cursor }, BATCH))
          this.options.onPageRead?.()
          if (rows.length === 0) {
            // Nothing placed after the cursor after all: wait for the next tick.
            for (const stream of group) stream.cursor = latest
            continue
          }
          for (const row of rows) {
            const seq = row.audit_seq ?? cursor
            // One copy of each event, written to every stream at this point of the log.
            const event = utf8OfPieces([
              `event: manifest\nid: ${seq}\ndata: `,
              ...envelopePieces(row),
              '\n\n',
            ])
            for (const stream of group) {
              if (!this.receives(stream) || stream.cursor >= seq) continue
              const flushed = stream.raw!.write(event)
              stream.cursor = seq
              if (!flushed) stream.blockedSince = Date.now()
            }
          }
        }
      } while (this.pumpAgain)
    } catch (err) {
      this.options.onError(err)
    } finally {
      this.pumping = false
    }
  }

  private readyStreamsBehind(latest: number): Stream[] {
    const behind: Stream[] = []
    for (const stream of this.streams)
      if (this.receives(stream) && stream.cursor < latest) behind.push(stream)
    return behind
  }

  /** Whether events are written to the stream now: open, not revoked, its socket not full. */
  private receives(stream: Stream): boolean {
    return (
      stream.raw !== null &&
      !stream.revoked &&
      stream.blockedSince === null &&
      this.streams.has(stream) &&
      !stream.raw.writableEnded
    )
  }
}
