import { EventStream, type StreamState } from './event-stream.ts'
import { auditSeqOf, type Envelope, type ManifestSummary, type Page, summarizeManifest } from './shapes.ts'

export interface FeedEntry {
  /** What the feed shows of the manifest (the whole envelope is read when its case is opened). */
  manifest: ManifestSummary
  /** The manifest's place in the audit log (the SSE event id). */
  seq: number | null
  /** When the console received it over the stream; null for manifests loaded with the page. */
  arrivedAt: number | null
}

/** What the feed needs of the API (the console's Api; anything that reads the API with the operator's key). */
export interface FeedApi {
  /** The request headers that carry the key (the stream sends them too). */
  readonly authorization: Record<string, string>
  get<T>(path: string): Promise<T>
}

const HOUR_MS = 3_600_000
const MAX_ENTRIES = 20_000
const MAX_PAGES = 40

/**
 * Every manifest of the last hour, kept current: first the list (`GET /v1/manifests?since=`), then the stream,
 * resumed right after the newest listed manifest so nothing issued in between is missed. Views subscribe to it;
 * it lives as long as the operator's key. Manifests can be large: the list is read page by page (each bounded by
 * the server), and only each manifest's summary is kept, never the envelope.
 */
export class ManifestFeed {
  /** Newest first. */
  entries: FeedEntry[] = []
  state: StreamState = { phase: 'connecting', attempt: 1 }
  loadError: unknown = null
  private readonly seen = new Set<string>()
  private readonly listeners = new Set<() => void>()
  private stream: EventStream | null = null

  constructor(private readonly api: FeedApi) {}

  async start(): Promise<void> {
    try {
      const since = new Date(Date.now() - HOUR_MS).toISOString()
      const path = `/v1/manifests?since=${encodeURIComponent(since)}&limit=500`
      let cursor: string | null = null
      for (let page = 0; page < MAX_PAGES; page++) {
        const url: string = cursor === null ? path : `${path}&cursor=${encodeURIComponent(cursor)}`
        const answer: Page<Envelope> = await this.api.get<Page<Envelope>>(url)
        for (const envelope of answer.items) this.add(envelope, auditSeqOf(envelope), null)
        cursor = answer.next_cursor
        if (cursor === null) break
      }
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
    this.entries.unshift({ manifest: summarizeManifest(envelope.manifest), seq, arrivedAt })
    // Log order, newest first (the list arrives oldest first, the stream in order).
    if (this.entries.length > 1 && seq !== null && (this.entries[1]?.seq ?? -1) > seq) {
      this.entries.sort((a, b) => (b.seq ?? 0) - (a.seq ?? 0))
    }
    if (this.entries.length > MAX_ENTRIES) {
      for (const dropped of this.entries.splice(MAX_ENTRIES)) this.seen.delete(dropped.manifest.manifest_id)
    }
    if (arrivedAt !== null) this.notify()
  }

  private notify(): void {
    for (const listener of this.listeners) listener()
  }
}
