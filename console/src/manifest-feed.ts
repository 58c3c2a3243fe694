import type { Api } from './api.ts'
import { EventStream, type StreamState } from './event-stream.ts'
import { auditSeqOf, type Envelope } from './shapes.ts'

export interface FeedEntry {
  envelope: Envelope
  /** The manifest's place in the audit log (the SSE event id). */
  seq: number | null
  /** When the console received it over the stream; null for manifests loaded with the page. */
  arrivedAt: number | null
}

const HOUR_MS = 3_600_000
const MAX_ENTRIES = 20_000

/**
 * Every manifest of the last hour, kept current: first the list (`GET /v1/manifests?since=`), then the stream,
 * resumed right after the newest listed manifest so nothing issued in between is missed. Views subscribe to it;
 * it lives as long as the operator's key.
 */
export class ManifestFeed {
  /** Newest first. */
  entries: FeedEntry[] = []
  state: StreamState = { phase: 'connecting', attempt: 1 }
  loadError: unknown = null
  private readonly seen = new Set<string>()
  private readonly listeners = new Set<() => void>()
  private stream: EventStream | null = null

  constructor(private readonly api: Api) {}

  async start(): Promise<void> {
    try {
      const since = new Date(Date.now() - HOUR_MS).toISOString()
      const listed = await this.api.getAll<Envelope>(
        `/v1/manifests?since=${encodeURIComponent(since)}&limit=500`,
        40,
      )
      for (const envelope of listed) this.add(envelope, auditSeqOf(envelope), null)
    } catch (err) {
      this.loadError = err
    }
    const newest = this.entries.reduce<number | null>(
      (max, entry) => (entry.seq !== null && (max === null || entry.seq > max) ? entry.seq : max),
      null,
    )
    this.stream = new EventStream({
      url: '/v1/manifests/stream',
      headers: () => this.api.authorization,
      lastEventId: newest === null ? null : String(newest),
      onEvent: (event) => {
        if (event.event !== 'manifest') return
        try {
          const envelope = JSON.parse(event.data) as Envelope
          const seq = Number(event.lastEventId)
          this.add(envelope, Number.isSafeInteger(seq) ? seq : auditSeqOf(envelope), Date.now())
        } catch {
          // A malformed event is skipped; the next one still counts.
        }
      },
      onState: (state) => {
        this.state = state
        this.notify()
      },
    })
    this.stream.start()
    this.notify()
  }

  stop(): void {
    this.stream?.stop()
    this.listeners.clear()
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private add(envelope: Envelope, seq: number | null, arrivedAt: number | null): void {
    const id = envelope.manifest?.manifest_id
    if (!id || this.seen.has(id)) return
    this.seen.add(id)
    this.entries.unshift({ envelope, seq, arrivedAt })
    // Log order, newest first (the list arrives oldest first, the stream in order).
    if (this.entries.length > 1 && seq !== null && (this.entries[1]?.seq ?? -1) > seq) {
      this.entries.sort((a, b) => (b.seq ?? 0) - (a.seq ?? 0))
    }
    if (this.entries.length > MAX_ENTRIES) {
      for (const dropped of this.entries.splice(MAX_ENTRIES))
        this.seen.delete(dropped.envelope.manifest.manifest_id)
    }
    if (arrivedAt !== null) this.notify()
  }

  private notify(): void {
    for (const listener of this.listeners) listener()
  }
}
