import { setTimeout as sleep } from 'node:timers/promises'
import autocannon from 'autocannon'
import { Pool } from 'undici'

/**
 * The two load generators. Both run in this process, against servers on the same machine, and each scenario
 * drives Arbiter and the baseline with the same generator, the same concurrency and the same duration:
 *
 * - `runLoops`: closed-loop virtual clients on an undici Pool (one connection per loop, one request in flight
 *   per loop). Used where one unit of work is several dependent requests (the decide path) and for the
 *   baseline it is compared with (POST /insert3).
 * - `cannon`: autocannon for single-request scenarios (reads, audit queries), with every response's latency
 *   recorded from autocannon's `response` event so any percentile (p95 included) is exact.
 */

export interface LatencySummary {
  count: number
  mean: number
  p50: number
  p95: number
  p99: number
  max: number
}

/** Nearest-rank percentiles over every sample (no histogram rounding). */
export function summarize(samples: readonly number[]): LatencySummary {
  if (samples.length === 0)
    return { count: 0, mean: Number.NaN, p50: Number.NaN, p95: Number.NaN, p99: Number.NaN, max: Number.NaN }
  const sorted = Float64Array.from(samples).sort()
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
  let sum = 0
  for (const value of sorted) sum += value
  return {
    count: sorted.length,
    mean: sum / sorted.length,
    p50: at(0.5),
    p95: at(0.95),
    p99: at(0.99),
    max: sorted[sorted.length - 1]!,
  }
}

/** Raised by `HttpTarget.call` for an unexpected status: the iteration stops, the failure is counted. */
export class UnexpectedResponse extends Error {
  override name = 'UnexpectedResponse'
}

/** Latency samples by label, plus every HTTP request's latency in `requests`. */
export class Recorder {
  readonly requests: number[] = []
  readonly byLabel = new Map<string, number[]>()
  failedRequests = 0
  failedIterations = 0
  readonly failureExamples: string[] = []

  add(label: string, ms: number, isRequest: boolean): void {
    if (isRequest) this.requests.push(ms)
    let list = this.byLabel.get(label)
    if (!list) {
      list = []
      this.byLabel.set(label, list)
    }
    list.push(ms)
  }

  failure(message: string): void {
    if (this.failureExamples.length < 5) this.failureExamples.push(message)
  }

  summary(label: string): LatencySummary {
    return summarize(this.byLabel.get(label) ?? [])
  }
}

export interface CallOptions {
  key?: string
  body?: unknown
  /** Statuses that count as success; anything else throws UnexpectedResponse. */
  expect: readonly number[]
  /** Latency label (several routes may share one). */
  label: string
}

/** One HTTP origin, one undici Pool with a connection per virtual client. */
export class HttpTarget {
  readonly pool: Pool

  constructor(
    readonly origin: string,
    connections: number,
  ) {
    this.pool = new Pool(origin, {
      connections,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: 300_000,
      bodyTimeout: 300_000,
    })
  }

  /**
   * Sends one request and records its latency (request sent → whole body received; parsing the JSON answer is
   * client work and not counted). Returns the parsed body and its size.
   */
  async call<T = unknown>(
    rec: Recorder | null,
    method: 'GET' | 'POST',
    path: string,
    options: CallOptions,
  ): Promise<{ status: number; body: T; bytes: number }> {
    const headers: Record<string, string> = {}
    if (options.key) headers.authorization = `Bearer ${options.key}`
    let payload: string | undefined
    if (options.body !== undefined) {
      payload = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
      headers['content-type'] = 'application/json'
    }
    const started = performance.now()
    let status: number
    let text: string
    try {
      const res = await this.pool.request({ method, path, headers, body: payload })
      status = res.statusCode
      text = await res.body.text()
    } catch (err) {
      if (rec) {
        rec.failedRequests += 1
        rec.failure(`${options.label}: ${(err as Error).message}`)
      }
      throw err
    }
    const ms = performance.now() - started
    if (!options.expect.includes(status)) {
      const message = `${options.label}: ${method} ${path.split('?')[0]} → ${status} ${text.slice(0, 300)}`
      if (rec) {
        rec.failedRequests += 1
        rec.failure(message)
      }
      throw new UnexpectedResponse(message)
    }
    rec?.add(options.label, ms, true)
    return { status, body: (text === '' ? null : JSON.parse(text)) as T, bytes: Buffer.byteLength(text) }
  }

  async close(): Promise<void> {
    await this.pool.close()
  }
}

export interface LoopResult {
  rec: Recorder
  elapsedMs: number
  iterations: number
  /** Successful HTTP requests per second over the window. */
  requestsPerSecond: number
}

/**
 * Runs `loops` virtual clients, each calling `iteration` back to back until `durationMs` has passed (and, if
 * given, until `minIterations` have completed in total, but never beyond `maxDurationMs`). With
 * `iterationsPerSecond`, iterations start no faster than that in total (the n-th at n / rate seconds, whichever
 * loop is free): the same offered load on two servers whatever their capacity. An iteration that throws counts
 * as failed; the loop pauses 10 ms and carries on, and the phase aborts when nothing succeeds.
 */
export async function runLoops(
  options: {
    loops: number
    durationMs: number
    minIterations?: number
    maxDurationMs?: number
    iterationsPerSecond?: number
  },
  iteration: (loop: number, rec: Recorder) => Promise<void>,
): Promise<LoopResult> {
  const rec = new Recorder()
  const started = performance.now()
  const deadline = started + options.durationMs
  const hardDeadline = started + Math.max(options.durationMs, options.maxDurationMs ?? 0)
  const minIterations = options.minIterations ?? 0
  let iterations = 0
  const over = (at: number) => at >= hardDeadline || (at >= deadline && iterations >= minIterations)
  let scheduled = 0
  /** Waits for this loop's next start when paced; false when that start would be past the window. */
  const paced = async () => {
    if (!options.iterationsPerSecond) return true
    const at = started + (scheduled++ * 1000) / options.iterationsPerSecond
    if (over(at)) return false
    const wait = at - performance.now()
    if (wait > 0) await sleep(wait)
    return true
  }
  const loop = async (index: number) => {
    for (;;) {
      if (!(await paced()) || over(performance.now())) return
      try {
        await iteration(index, rec)
        iterations += 1
      } catch (err) {
        rec.failedIterations += 1
        if (!(err instanceof UnexpectedResponse)) rec.failure(String((err as Error).stack ?? err))
        if (rec.failedIterations >= 50 && iterations === 0) {
          throw new Error(`every iteration fails, e.g.:\n${rec.failureExamples.join('\n')}`)
        }
        await sleep(10)
      }
    }
  }
  await Promise.all(Array.from({ length: options.loops }, (_, index) => loop(index)))
  const elapsedMs = performance.now() - started
  return { rec, elapsedMs, iterations, requestsPerSecond: rec.requests.length / (elapsedMs / 1000) }
}

/**
 * Checks one answer in `every` (the load generator's sample): `verify` says what is wrong with an answer to `path`,
 * or null when it is the one asked for; `body()` is the answer's JSON, parsed (only for the answers checked).
 */
export interface AnswerCheck {
  every: number
  verify(path: string, status: number, body: () => unknown): string | null
}

/** The answers a window checked, and the first few that were wrong. */
export class AnswerSample {
  seen = 0
  checked = 0
  wrong = 0
  readonly examples: string[] = []

  constructor(private readonly check: AnswerCheck) {}

  /** Counts an answer; checks it when it is one of the sample. */
  answer(path: string, status: number, body: () => unknown): void {
    if (this.seen++ % this.check.every !== 0) return
    this.checked += 1
    let problem: string | null
    try {
      problem = this.check.verify(path, status, body)
    } catch (err) {
      problem = `unreadable answer: ${(err as Error).message}`
    }
    if (problem === null) return
    this.wrong += 1
    if (this.examples.length < 5) this.examples.push(`${path}: ${problem}`)
  }

  summary(): AnswerSummary {
    return { every: this.check.every, checked: this.checked, wrong: this.wrong, examples: this.examples }
  }
}

export interface AnswerSummary {
  every: number
  checked: number
  wrong: number
  examples: string[]
}

export interface CannonResult {
  requestsPerSecond: number
  latency: LatencySummary
  non2xx: number
  errors: number
  durationS: number
  /** The sample of answers checked, when the window checked any. */
  answers?: AnswerSummary
}

/** autocannon GETs over `nextPath()`, latency of every 2xx response recorded, a sample of answers checked. */
export async function cannon(options: {
  origin: string
  connections: number
  durationS: number
  headers?: Record<string, string>
  nextPath: () => string
  check?: AnswerCheck
}): Promise<CannonResult> {
  const latencies: number[] = []
  let non2xx = 0
  const sample = options.check && new AnswerSample(options.check)
  // autocannon keeps a context per connection; with one request in flight on each, it is that request's.
  const setupRequest = (request: autocannon.Request, context: Record<string, unknown>) => {
    const path = options.nextPath()
    context.path = path
    return { ...request, path }
  }
  const onResponse = (status: number, body: string, context: Record<string, unknown>) =>
    sample?.answer(String(context.path), status, () => JSON.parse(body))
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.origin,
        connections: options.connections,
        duration: options.durationS,
        pipelining: 1,
        timeout: 60,
        headers: options.headers ?? {},
        requests: [{ method: 'GET', setupRequest, ...(sample ? { onResponse } : {}) }],
      },
      (err, result) => {
        if (err) return reject(err)
        resolve({
          requestsPerSecond: latencies.length / result.duration,
          latency: summarize(latencies),
          non2xx,
          errors: result.errors,
          durationS: result.duration,
          ...(sample ? { answers: sample.summary() } : {}),
        })
      },
    )
    instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTimeMs)
      else non2xx += 1
    })
  })
}
