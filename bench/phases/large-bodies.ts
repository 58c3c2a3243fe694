import { setTimeout as sleep } from 'node:timers/promises'
import { Client, Pool } from 'undici'
import { type LatencySummary, summarize } from '../load.ts'
import { log } from '../run-context.ts'
import { makeEvidence } from '../workloads.ts'

/**
 * Large bodies and the event loop: ten ~1 MiB evidence bodies sent at once (`POST /v1/outcomes`) while
 * `/healthz` is polled on a connection of its own, one request after another. A `/healthz` answer that takes
 * long means the event loop was busy with the bodies; the figure is the worst of them (target ≤ 100 ms).
 */

export const LARGE_BODY_TARGET_MS = 100

export interface LargeBodiesPhase {
  bodyBytes: number
  bodiesPerBurst: number
  bursts: number
  /** /healthz latency with nothing else going on (the floor). */
  idleHealthz: LatencySummary
  /** Every /healthz latency measured while a burst was in flight. */
  burstHealthz: LatencySummary
  /** The worst /healthz latency of each burst. */
  worstHealthzMsByBurst: number[]
  worstHealthzMs: number
  /** Request sent → answer received, for each large body. */
  bodyLatency: LatencySummary
  result: 'PASS' | 'MISS'
}

/** One `POST /v1/outcomes` body of at most `bytes` bytes, carrying one large `result_payload`. */
function largeOutcomeBody(bytes: number, runId: string): string {
  const evidence = makeEvidence(bytes - 2048)
  const text = JSON.stringify({ subagent_id: 'large-body-agent', run_id: runId, evidence })
  if (Buffer.byteLength(text) > bytes)
    throw new Error(`body of ${Buffer.byteLength(text)} B exceeds ${bytes}`)
  return text
}

async function pollHealthz(client: Client, until: () => boolean, samples: number[]): Promise<void> {
  while (!until()) {
    const started = performance.now()
    const res = await client.request({ method: 'GET', path: '/healthz' })
    await res.body.text()
    if (res.statusCode !== 200) throw new Error(`/healthz answered ${res.statusCode}`)
    samples.push(performance.now() - started)
    await sleep(2)
  }
}

export async function measureLargeBodies(options: {
  origin: string
  orchestratorKey: string
  bodyBytes?: number
  bodiesPerBurst?: number
  bursts?: number
}): Promise<LargeBodiesPhase> {
  const bodyBytes = options.bodyBytes ?? 1024 * 1024
  const bodiesPerBurst = options.bodiesPerBurst ?? 10
  const bursts = options.bursts ?? 3
  const health = new Client(options.origin, { pipelining: 1 })
  const posts = new Pool(options.origin, {
    connections: bodiesPerBurst,
    pipelining: 1,
    headersTimeout: 300_000,
    bodyTimeout: 300_000,
  })
  const runPrefix = `large-${process.pid}-${Date.now().toString(36)}`
  let runCounter = 0
  const post = async (body: string): Promise<number> => {
    const started = performance.now()
    const res = await posts.request({
      method: 'POST',
      path: '/v1/outcomes',
      headers: { authorization: `Bearer ${options.orchestratorKey}`, 'content-type': 'application/json' },
      body,
    })
    const text = await res.body.text()
    if (res.statusCode !== 201) throw new Error(`POST /v1/outcomes → ${res.statusCode} ${text.slice(0, 300)}`)
    return performance.now() - started
  }
  try {
    log(`large bodies: warming up (one ${(bodyBytes / 1024).toFixed(0)} KiB body, idle /healthz)`)
    await post(largeOutcomeBody(bodyBytes, `${runPrefix}-${++runCounter}`))
    const idle: number[] = []
    const idleUntil = performance.now() + 1000
    await pollHealthz(health, () => performance.now() >= idleUntil, idle)

    const during: number[] = []
    const worstByBurst: number[] = []
    const bodyLatencies: number[] = []
    for (let burst = 0; burst < bursts; burst++) {
      // Built before the burst: the client's own JSON.stringify must not delay its /healthz polls.
      const bodies = Array.from({ length: bodiesPerBurst }, () =>
        largeOutcomeBody(bodyBytes, `${runPrefix}-${++runCounter}`),
      )
      const samples: number[] = []
      let done = false
      const poller = pollHealthz(health, () => done, samples)
      try {
        bodyLatencies.push(...(await Promise.all(bodies.map(post))))
      } finally {
        done = true
        await poller
      }
      during.push(...samples)
      worstByBurst.push(Math.max(...samples))
      log(
        `large bodies: burst ${burst + 1}/${bursts}: worst /healthz ${Math.max(...samples).toFixed(1)} ms over ${samples.length} polls`,
      )
    }
    const worstHealthzMs = Math.max(...worstByBurst)
    return {
      bodyBytes,
      bodiesPerBurst,
      bursts,
      idleHealthz: summarize(idle),
      burstHealthz: summarize(during),
      worstHealthzMsByBurst: worstByBurst,
      worstHealthzMs,
      bodyLatency: summarize(bodyLatencies),
      result: worstHealthzMs <= LARGE_BODY_TARGET_MS ? 'PASS' : 'MISS',
    }
  } finally {
    await health.close()
    await posts.close()
  }
}

export function printLargeBodies(name: string, phase: LargeBodiesPhase): void {
  const f = (value: number) => value.toFixed(1)
  process.stdout.write(
    `\nLarge bodies (${name}): ${phase.bursts} bursts of ${phase.bodiesPerBurst} × ${(phase.bodyBytes / 1024).toFixed(0)} KiB POST /v1/outcomes\n` +
      `  /healthz idle:          p50 ${f(phase.idleHealthz.p50)} ms, max ${f(phase.idleHealthz.max)} ms\n` +
      `  /healthz during bursts: p50 ${f(phase.burstHealthz.p50)} ms, p99 ${f(phase.burstHealthz.p99)} ms, worst ${f(phase.worstHealthzMs)} ms (by burst: ${phase.worstHealthzMsByBurst.map(f).join(', ')})\n` +
      `  each large body:        p50 ${f(phase.bodyLatency.p50)} ms, max ${f(phase.bodyLatency.max)} ms\n` +
      `  target: worst /healthz ≤ ${LARGE_BODY_TARGET_MS} ms → ${phase.result}\n`,
  )
}
