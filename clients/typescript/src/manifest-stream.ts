import type { Client } from 'openapi-fetch'
import { ArbiterClientError, ArbiterError, ArbiterProtocolError, type RequestLabel } from './errors.ts'
import type { paths } from './generated/openapi.ts'
import { parseRetryAfter, sleep } from './retry.ts'
import { SseParser } from './sse.ts'
import { problemOf } from './transport.ts'
import type { ManifestEnvelope } from './types.ts'

/** One manifest from the stream: the SSE `id` (the manifest's `audit_seq`, as sent and as a number) and its envelope. */
export interface ManifestEvent {
  id: string
  auditSeq: number
  envelope: ManifestEnvelope
}

export interface ManifestStreamOptions {
  /**
   * Resume after this event id (a manifest's `audit_seq`): every manifest sequenced after it comes first. Without
   * it the stream starts with manifests sequenced after it opens (`0` replays the whole log).
   */
  lastEventId?: string | number
  /** Ends the iteration (the loop simply finishes) and closes the connection. */
  signal?: AbortSignal
  /** Called each time a connection opens, with the Last-Event-ID it was opened with. */
  onConnect?: (info: { lastEventId: string | undefined; connections: number }) => void
  /** First reconnection delay; default: what the server asked with `retry:`, else 1,000 ms. Doubles while failing. */
  reconnectDelayMs?: number
  /** Upper bound of the reconnection delay. Default 30,000 ms. */
  maxReconnectDelayMs?: number
  /** A connection silent for this long (the server sends heartbeats) is presumed dead and replaced. Default 45,000 ms. */
  idleTimeoutMs?: number
  /** Bound on opening one connection (until the response headers arrive); default the client's `timeoutMs`. */
  connectTimeoutMs?: number
}

export interface StreamDependencies {
  api: Client<paths>
  connectTimeoutMs: number
  random?: () => number
}

const REQUEST: RequestLabel = { method: 'GET', path: '/v1/manifests/stream' }
const SEQ = /^\d{1,15}$/

/**
 * `GET /v1/manifests/stream` as an async iterator. It reconnects whenever the connection ends or fails — a
 * server restart, a dropped proxy, a silent socket — after a backoff (honouring Retry-After on 429/503), sending
 * `Last-Event-ID` = the id of the last manifest it yielded, so once it has a position no manifest is skipped, and
 * none is yielded twice (an event at or before the position is dropped). Answers that retrying cannot fix (401,
 * 403, 400) and unreadable events end the iteration with an error.
 */
export async function* streamManifests(
  deps: StreamDependencies,
  options: ManifestStreamOptions = {},
): AsyncGenerator<ManifestEvent, void, undefined> {
  const outer = options.signal
  let position = options.lastEventId === undefined ? undefined : String(options.lastEventId)
  if (position !== undefined && !SEQ.test(position)) {
    throw new TypeError(`lastEventId must be a manifest audit_seq (a decimal integer), got ${position}`)
  }
  const maxDelay = options.maxReconnectDelayMs ?? 30_000
  const idleTimeoutMs = options.idleTimeoutMs ?? 45_000
  const connectTimeoutMs = options.connectTimeoutMs ?? deps.connectTimeoutMs
  const random = deps.random ?? Math.random
  let serverRetryMs: number | undefined
  let failures = 0
  let connections = 0

  /** Equal jitter around a delay that doubles with each consecutive failure. */
  const nextDelay = (asked?: number): number => {
    if (asked !== undefined) return asked
    const base = options.reconnectDelayMs ?? serverRetryMs ?? 1_000
    const delay = Math.min(maxDelay, base * 2 ** failures)
    return delay / 2 + random() * (delay / 2)
  }

  while (!outer?.aborted) {
    // Closing a connection aborts its request and cancels its body reader. The cancel is what ends a pending read:
    // once the response has arrived, fetch follows the request's signal only through a weak reference, so an abort
    // alone may reach nothing. The caller's signal is forwarded with a listener for the same reason (a composite
    // AbortSignal.any() that nothing else holds can be collected mid-stream).
    const connection = new AbortController()
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
    const close = (reason?: unknown) => {
      connection.abort(reason)
      reader?.cancel(reason).catch(() => {})
    }
    const onAbort = () => close(outer!.reason)
    outer?.addEventListener('abort', onAbort, { once: true })
    let watchdog: ReturnType<typeof setTimeout> | undefined
    const arm = (ms: number) => {
      watchdog = setTimeout(() => close(), ms)
    }
    const disarm = () => clearTimeout(watchdog)
    let asked: number | undefined
    try {
      arm(connectTimeoutMs)
      const { data, error, response } = await deps.api.GET('/v1/manifests/stream', {
        params: { header: position === undefined ? {} : { 'last-event-id': position } },
        parseAs: 'stream',
        signal: connection.signal,
      })
      disarm()
      if (!response.ok || !data) {
        const problem = problemOf(response, error)
        // Overload and restarts pass; a refused key, a missing role or a bad Last-Event-ID do not.
        if (response.status !== 429 && response.status < 500) throw new ArbiterError(problem, REQUEST)
        asked = parseRetryAfter(response.headers.get('retry-after'), Date.now())
        failures++
      } else {
        failures = 0
        connections++
        options.onConnect?.({ lastEventId: position, connections })
        reader = data.getReader()
        const decoder = new TextDecoder()
        const parser = new SseParser(position)
        for (;;) {
          arm(idleTimeoutMs)
          const { value, done } = await reader.read()
          disarm()
          if (done) break
          for (const block of parser.push(decoder.decode(value, { stream: true }))) {
            if (block.data === undefined) {
              // A block with only an id: the server states the position without sending an event.
              if (block.hasId && block.id !== undefined && SEQ.test(block.id)) position = block.id
              continue
            }
            if (block.event !== 'manifest') continue
            if (!block.hasId || block.id === undefined || !SEQ.test(block.id)) {
              throw new ArbiterProtocolError(REQUEST, `a manifest event without a numeric id (${block.id})`)
            }
            if (position !== undefined && Number(block.id) <= Number(position)) continue
            let envelope: ManifestEnvelope
            try {
              envelope = JSON.parse(block.data) as ManifestEnvelope
            } catch (err) {
              throw new ArbiterProtocolError(REQUEST, `manifest event ${block.id} is not JSON`, {
                cause: err,
              })
            }
            position = block.id
            yield { id: block.id, auditSeq: Number(block.id), envelope }
          }
          serverRetryMs = parser.retryMs ?? serverRetryMs
        }
      }
    } catch (err) {
      if (outer?.aborted) return
      if (err instanceof ArbiterClientError) throw err
      // Refused, reset, cut off or silent: the server is restarting or the path is broken. Try again.
      failures++
    } finally {
      disarm()
      outer?.removeEventListener('abort', onAbort)
      close()
    }
    try {
      await sleep(nextDelay(asked), outer)
    } catch {
      return
    }
  }
}
