import { request as httpRequest } from 'node:http'

export interface SseEvent {
  event?: string
  id?: string
  data?: string
}

/** A minimal SSE reader over a real socket: collects events and comment lines until closed. */
export function openStream(base: string, key: string | null, headers: Record<string, string> = {}) {
  const events: SseEvent[] = []
  const comments: string[] = []
  let status = 0
  let ended = false
  let retryAfter: string | undefined
  let buffer = ''
  const waiters: Array<() => void> = []
  const req = httpRequest(`${base}/v1/manifests/stream`, {
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
  })
  const ready = new Promise<void>((resolve, reject) => {
    req.on('response', (res) => {
      status = res.statusCode ?? 0
      retryAfter = res.headers['retry-after'] as string | undefined
      res.on('close', () => {
        ended = true
        for (const wake of waiters.splice(0)) wake()
      })
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        buffer += chunk
        let end = buffer.indexOf('\n\n')
        while (end >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const event: SseEvent = {}
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim())
            else if (line.startsWith('event: ')) event.event = line.slice(7)
            else if (line.startsWith('id: ')) event.id = line.slice(4)
            else if (line.startsWith('data: ')) event.data = line.slice(6)
          }
          if (event.event) events.push(event)
          end = buffer.indexOf('\n\n')
        }
        for (const wake of waiters.splice(0)) wake()
      })
      resolve()
    })
    req.on('error', (err) => {
      ended = true
      reject(err)
    })
  })
  req.end()
  return {
    ready,
    events,
    comments,
    status: () => status,
    retryAfter: () => retryAfter,
    /** Whether the server ended the response (or the connection failed). */
    ended: () => ended,
    async until(predicate: () => boolean, ms = 5000) {
      const deadline = Date.now() + ms
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error(`timed out; have ${events.length} events`)
        await new Promise<void>((resolve) => {
          waiters.push(resolve)
          setTimeout(resolve, 50)
        })
      }
    },
    close: () => req.destroy(),
  }
}
