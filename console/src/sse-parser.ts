/**
 * An incremental Server-Sent Events parser (the WHATWG "event stream interpretation"), fed decoded text in
 * chunks of any size. `EventSource` cannot send an Authorization header, so the console reads the stream with
 * `fetch` and parses it here; chunk boundaries may fall anywhere, even between the CR and LF of one line end.
 */
export interface SseEvent {
  /** The event type (`message` when the stream named none). */
  event: string
  data: string
  /** The last event ID in force when this event was dispatched (ids persist until a later `id:` changes them). */
  lastEventId: string | null
}

export class SseParser {
  private buffer = ''
  private started = false
  private dataLines: string[] = []
  private eventType = ''
  private lastId: string | null
  private retry: number | null = null

  constructor(lastEventId: string | null = null) {
    this.lastId = lastEventId
  }

  /** The id to send as `Last-Event-ID` when reconnecting. */
  get lastEventId(): string | null {
    return this.lastId
  }

  /** The reconnection delay the server asked for with `retry:`, if any. */
  get retryMs(): number | null {
    return this.retry
  }

  /** Feeds one chunk of text; returns the events it completed, in order. */
  push(chunk: string): SseEvent[] {
    let text = this.buffer + chunk
    if (!this.started && text.length > 0) {
      this.started = true
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    const events: SseEvent[] = []
    let start = 0
    for (let i = 0; i < text.length; i++) {
      const c = text[i]
      if (c !== '\n' && c !== '\r') continue
      // A CR at the very end may be the first half of CRLF: wait for the next chunk to tell.
      if (c === '\r' && i === text.length - 1) break
      this.processLine(text.slice(start, i), events)
      if (c === '\r' && text[i + 1] === '\n') i += 1
      start = i + 1
    }
    this.buffer = text.slice(start)
    return events
  }

  /** The stream ended: a trailing CR was a line end, and an event without its blank line is discarded. */
  end(): SseEvent[] {
    const events: SseEvent[] = []
    if (this.buffer.endsWith('\r')) this.processLine(this.buffer.slice(0, -1), events)
    this.buffer = ''
    this.dataLines = []
    this.eventType = ''
    return events
  }

  private processLine(line: string, events: SseEvent[]): void {
    if (line === '') {
      this.dispatch(events)
      return
    }
    if (line.startsWith(':')) return
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    switch (field) {
      case 'data':
        this.dataLines.push(value)
        break
      case 'event':
        this.eventType = value
        break
      case 'id':
        if (!value.includes('\u0000')) this.lastId = value
        break
      case 'retry':
        if (/^\d+$/.test(value)) this.retry = Number(value)
        break
      default:
      // Unknown fields are ignored, as the standard says.
    }
  }

  private dispatch(events: SseEvent[]): void {
    if (this.dataLines.length > 0) {
      events.push({
        event: this.eventType || 'message',
        data: this.dataLines.join('\n'),
        lastEventId: this.lastId,
      })
    }
    this.dataLines = []
    this.eventType = ''
  }
}
