/**
 * A Server-Sent Events parser following the WHATWG HTML "event stream interpretation": lines end in CR LF, LF or
 * CR (also when a CR LF pair is split between two chunks), `:` starts a comment, a field without a colon has an
 * empty value, one space after the colon is dropped, and a blank line dispatches the block.
 */

/** One dispatched block. `data` is undefined when the block had no data field (it only moved `id` or `retry`). */
export interface SseBlock {
  /** The `event` field, `message` when absent. */
  event: string
  data: string | undefined
  /** The last event ID after this block (ids persist from block to block until changed), undefined if none yet. */
  id: string | undefined
  /** Whether this block carried an `id` field itself. */
  hasId: boolean
}

export class SseParser {
  private buffer = ''
  private startOfStream = true
  private pendingCr = false
  private eventType = ''
  private data: string[] = []
  private idInBlock = false
  private sawField = false
  /** The stream's last event ID so far. */
  lastEventId: string | undefined
  /** The reconnection time the server asked for with `retry:`, in ms. */
  retryMs: number | undefined

  constructor(lastEventId?: string) {
    this.lastEventId = lastEventId
  }

  /** Feeds decoded text; returns the blocks it completed, in order. */
  push(text: string): SseBlock[] {
    let chunk = text
    if (this.startOfStream && chunk.length > 0) {
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1)
      this.startOfStream = false
    }
    // A CR that ended the previous chunk already ended its line; a LF right after it belongs to that line end.
    if (this.pendingCr && chunk.startsWith('\n')) chunk = chunk.slice(1)
    this.pendingCr = false

    const blocks: SseBlock[] = []
    this.buffer += chunk
    let start = 0
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer[i]
      if (ch !== '\n' && ch !== '\r') continue
      const line = this.buffer.slice(start, i)
      if (ch === '\r') {
        if (i + 1 < this.buffer.length) {
          if (this.buffer[i + 1] === '\n') i++
        } else {
          this.pendingCr = true
        }
      }
      start = i + 1
      const block = this.line(line)
      if (block) blocks.push(block)
    }
    this.buffer = this.buffer.slice(start)
    return blocks
  }

  private line(line: string): SseBlock | undefined {
    if (line === '') return this.dispatch()
    if (line.startsWith(':')) return undefined
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    switch (field) {
      case 'event':
        this.eventType = value
        this.sawField = true
        break
      case 'data':
        this.data.push(value)
        this.sawField = true
        break
      case 'id':
        // An id with NUL is ignored, as the standard says (it could not be sent back in a header).
        if (!value.includes('\0')) {
          this.lastEventId = value
          this.idInBlock = true
          this.sawField = true
        }
        break
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value)
        break
      default:
        break
    }
    return undefined
  }

  private dispatch(): SseBlock | undefined {
    const block: SseBlock = {
      event: this.eventType === '' ? 'message' : this.eventType,
      data: this.data.length > 0 ? this.data.join('\n') : undefined,
      id: this.lastEventId,
      hasId: this.idInBlock,
    }
    const any = this.sawField
    this.eventType = ''
    this.data = []
    this.idInBlock = false
    this.sawField = false
    return any ? block : undefined
  }
}
