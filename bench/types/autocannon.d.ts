// The part of autocannon@8's programmatic API the benchmark uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  namespace autocannon {
    interface Request {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string
      /** `context` is the connection's own (one per connection, fresh for each pass over `requests`). */
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request | null | undefined
      /** Each answer to this request, its whole body as text. */
      onResponse?: (status: number, body: string, context: Record<string, unknown>) => void
    }

    interface Options {
      url: string
      connections?: number
      /** Seconds. */
      duration?: number
      pipelining?: number
      /** Seconds a request may take before it counts as a timeout. */
      timeout?: number
      method?: string
      headers?: Record<string, string>
      requests?: Request[]
    }

    interface Histogram {
      average: number
      mean: number
      stddev: number
      min: number
      max: number
      total: number
      p50: number
      p90: number
      p99: number
    }

    interface Result {
      requests: Histogram
      latency: Histogram
      throughput: Histogram
      errors: number
      timeouts: number
      non2xx: number
      /** Wall-clock seconds of the run. */
      duration: number
      start: Date
      finish: Date
    }

    interface Instance extends EventEmitter {
      stop(): void
      on(
        event: 'response',
        listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void,
      ): this
      on(event: string, listener: (...args: unknown[]) => void): this
    }
  }

  function autocannon(
    options: autocannon.Options,
    callback: (err: Error | null, result: autocannon.Result) => void,
  ): autocannon.Instance

  export = autocannon
}
