import { once } from 'node:events'
import { loadavg } from 'node:os'
import { Worker } from 'node:worker_threads'
import { Pool } from 'undici'
import { type LatencySummary, summarize } from '../load.ts'
import { processCpuSeconds, threadCpuSeconds } from '../processes.ts'
import type { RunningArbiter } from '../servers.ts'

/**
 * The worst case the limits allow (docs/limits.md), 32 cases at once: fan-outs at 5,000 claims and about 1 MiB of
 * latest results with more than 16 positions to every fact, outcomes of 1,000 evidence items judged by 16
 * orchestrators on versions far apart, and council reviews of 10 judges × 200 findings — each created, filled and
 * decided; then 12 concurrent 500-item list reads of the manifests and 300 streams attempted with one key.
 * `/healthz` is polled on a connection of its own throughout. Figures: the peak RSS of the phase, the `/healthz`
 * delay (p99 ≤ 100 ms), answers ≥ 500 other than 503 (0), whether the process is still alive, and the largest
 * manifest signed.
 */

export const WORST_CASE_TARGETS = { peakRssBytes: 512 * 1024 * 1024, healthzP99Ms: 100 }

const CASES = 32
const LIST_READS = 12
const STREAMS = 300

/** The three parts of the phase, measured apart: the cases, then the list reads, then the streams. */
export const WORST_CASE_PARTS = ['cases', 'list reads', 'streams'] as const
export type WorstCasePart = (typeof WORST_CASE_PARTS)[number]

export interface WorstCasePhase {
  cases: { fanouts: number; outcomes: number; reviews: number }
  casesSeconds: number
  peakRssBytes: number
  healthz: LatencySummary
  /** /healthz polls that got no answer at all. */
  healthzUnanswered: number
  /**
   * Peak RSS and /healthz delay of each part, and the CPU seconds the process and its main thread (the event loop)
   * used in it: on a shared machine the steadier figure of how much work a part puts on the loop.
   */
  parts: Record<
    WorstCasePart,
    {
      peakRssBytes: number
      healthz: LatencySummary
      healthzSamples: number
      cpuSeconds: number
      mainThreadCpuSeconds: number
    }
  >
  /** The machine's 1-minute load average when the phase started and when it ended. */
  loadAverage: { start: number; end: number }
  /** Answers with a status ≥ 500 other than 503, by route. */
  serverErrors: Record<string, number>
  /** Every answer's status, by what was asked. */
  statuses: Record<string, Record<string, number>>
  processAlive: boolean
  largestManifestBytes: number
  listRead: { pages: number; largestPageBytes: number; seconds: number }
  streams: { attempted: number; statuses: Record<string, number> }
  result: 'PASS' | 'MISS'
}

interface Session {
  pool: Pool
  statuses: Record<string, Record<string, number>>
  serverErrors: Record<string, number>
  largestManifestBytes: number
}

async function call(
  session: Session,
  label: string,
  key: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  let res: Awaited<ReturnType<Pool['request']>>
  let text: string
  try {
    res = await session.pool.request({
      method,
      path,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    })
    text = await res.body.text()
  } catch (err) {
    // No answer at all (the connection closed: the process may have died): counted, and the phase goes on.
    const byStatus = session.statuses[label] ?? {}
    session.statuses[label] = byStatus
    byStatus['no answer'] = (byStatus['no answer'] ?? 0) + 1
    session.serverErrors[`${label} (no answer: ${(err as Error).message})`] =
      (session.serverErrors[`${label} (no answer: ${(err as Error).message})`] ?? 0) + 1
    return { status: 0, text: '' }
  }
  const byStatus = session.statuses[label] ?? {}
  session.statuses[label] = byStatus
  byStatus[res.statusCode] = (byStatus[res.statusCode] ?? 0) + 1
  if (res.statusCode >= 500 && res.statusCode !== 503)
    session.serverErrors[label] = (session.serverErrors[label] ?? 0) + 1
  return { status: res.statusCode, text }
}

/** Records the size of the manifest an envelope answer carries. */
function noteManifest(session: Session, text: string): void {
  const manifest = (JSON.parse(text) as { manifest?: unknown }).manifest
  if (manifest === undefined) return
  session.largestManifestBytes = Math.max(
    session.largestManifestBytes,
    Buffer.byteLength(JSON.stringify(manifest)),
  )
}

/** 10 subtasks × 500 claims over 10 facts, every claim its own value: 500 positions to a fact, ~1 MiB in all. */
async function fanoutAtTheLimits(session: Session, key: string, tag: string): Promise<void> {
  const facts = Array.from({ length: 10 }, (_, i) => `fact.${i}`)
  const subtasks = Array.from({ length: 10 }, (_, i) => `st_${i}`)
  const created = await call(session, 'fan-out create', key, 'POST', '/v1/fanouts', {
    orchestrator_id: 'bench-limits',
    fanout_key: tag,
    question: 'worst case',
    facts,
    subtasks: subtasks.map((subtask_id) => ({ subtask_id, facts })),
  })
  if (created.status !== 201) return
  const fanoutId = (JSON.parse(created.text) as { fanout_id: string }).fanout_id
  for (const [s, subtask] of subtasks.entries()) {
    const body = {
      subtask_id: subtask,
      status: 'DONE',
      summary: `${subtask} done`,
      evidence: [`${subtask} notes`],
      claims: Array.from({ length: 500 }, (_, i) => ({
        fact: facts[i % facts.length],
        value: { amount: s * 500 + i, currency: 'USD' },
        confidence: 0.5,
        sources: [
          {
            uri: `https://source.example/${subtask}/${i}`,
            excerpt: `${subtask} claim ${i} `.padEnd(40, '.'),
          },
        ],
      })),
    }
    await call(session, 'fan-out result', key, 'POST', `/v1/fanouts/${fanoutId}/results`, body)
  }
  const reconciled = await call(
    session,
    'fan-out reconcile',
    key,
    'POST',
    `/v1/fanouts/${fanoutId}/reconcile`,
  )
  if (reconciled.status === 200) noteManifest(session, reconciled.text)
}

/** 1,000 evidence items listed by two versions far apart (1 and 999 items), 16 orchestrators split between them, disagreeing. */
async function outcomeAtTheLimits(session: Session, key: string, tag: string): Promise<void> {
  const item = (i: number) => ({ kind: 'log', content: { line: i, text: `event ${i}`.padEnd(200, '.') } })
  const orchestrators = Array.from({ length: 16 }, (_, i) => `orch-${String(i).padStart(2, '0')}`)
  const created = await call(session, 'outcome create', key, 'POST', '/v1/outcomes', {
    subagent_id: 'bench-limits',
    run_id: tag,
    evidence: [item(0)],
    expected_orchestrators: orchestrators,
  })
  if (created.status !== 201) return
  const outcome = JSON.parse(created.text) as { outcome_id: string; evidence_hash: string }
  await call(session, 'outcome evidence', key, 'POST', `/v1/outcomes/${outcome.outcome_id}/evidence`, {
    evidence: Array.from({ length: 998 }, (_, i) => item(i + 1)),
  })
  for (const [i, orchestrator] of orchestrators.entries()) {
    await call(
      session,
      'outcome interpretation',
      key,
      'POST',
      `/v1/outcomes/${outcome.outcome_id}/interpretations`,
      {
        orchestrator_id: orchestrator,
        outcome_interpretation: i % 2 === 0 ? 'success' : 'failure',
        success_criterion: { require: ['exit_code == 0'], by: orchestrator, threshold: i },
        ...(i % 8 === 0 ? { evidence_hash: outcome.evidence_hash } : {}),
        intended_action: { kind: 'compensate', resources: [`refund:${tag}:${i}`] },
      },
    )
  }
  const evaluated = await call(
    session,
    'outcome evaluate',
    key,
    'POST',
    `/v1/outcomes/${outcome.outcome_id}/evaluate`,
  )
  if (evaluated.status === 200) noteManifest(session, evaluated.text)
}

/** A council of 10 judges, each returning 200 findings of its own. */
async function reviewAtTheLimits(session: Session, key: string, tag: string): Promise<void> {
  const judges = Array.from({ length: 10 }, (_, i) => ({
    judge_id: `judge-${i}`,
    model: `model-${i}`,
    context_id: `ctx-${i}`,
  }))
  const created = await call(session, 'review create', key, 'POST', '/v1/reviews', {
    orchestrator_id: 'bench-limits',
    review_key: tag,
    mode: 'council',
    subject: { digest: `sha256:${'ab'.repeat(32)}` },
    implementer: { model: 'model-impl', context_id: 'ctx-impl' },
    judges,
  })
  if (created.status !== 201) return
  const reviewId = (JSON.parse(created.text) as { review_id: string }).review_id
  for (const [j, judge] of judges.entries()) {
    await call(session, 'review verdict', key, 'POST', `/v1/reviews/${reviewId}/verdicts`, {
      judge_id: judge.judge_id,
      revision: 0,
      status: 'DONE',
      summary: `${judge.judge_id} read the diff`,
      evidence: ['diff'],
      findings: Array.from({ length: 200 }, (_, i) => ({
        severity: 'medium',
        title: `judge ${j} finding ${i}: ${'a retry path that is not idempotent'.padEnd(200, '.')}`,
        location: `src/module-${j}/file-${i}.ts:${i}`,
        lens: 'correctness',
        detail: 'detail '.repeat(20),
      })),
    })
  }
  const decided = await call(session, 'review decide', key, 'POST', `/v1/reviews/${reviewId}/decide`)
  if (decided.status === 200) noteManifest(session, decided.text)
}

/**
 * The `/healthz` poller, in a thread of its own: the phase's clients parse megabyte pages on the bench's event
 * loop, and a poller sharing that loop would count their parsing as the server's delay. It polls on one
 * connection, one request after another (5 ms apart), labels each delay with the part named last, and answers
 * `{samples, failures}` when told to stop.
 */
const HEALTHZ_POLLER = `
const { parentPort, workerData } = require('node:worker_threads')
let part = workerData.part
let stopped = false
const samples = {}
let failures = 0
parentPort.on('message', (message) => {
  if (message.part) part = message.part
  if (message.stop) stopped = true
})
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
;(async () => {
  while (!stopped) {
    const label = part
    const started = performance.now()
    try {
      const res = await fetch(workerData.url, { signal: AbortSignal.timeout(60000) })
      await res.arrayBuffer()
    } catch {
      failures++
      await sleep(100)
      continue
    }
    ;(samples[label] ??= []).push(performance.now() - started)
    await sleep(5)
  }
  parentPort.postMessage({ samples, failures })
})()
`

class HealthzPoller {
  readonly #worker: Worker

  constructor(origin: string, part: string) {
    this.#worker = new Worker(HEALTHZ_POLLER, { eval: true, workerData: { url: `${origin}/healthz`, part } })
  }

  enter(part: string): void {
    this.#worker.postMessage({ part })
  }

  async stop(): Promise<{ samples: Map<string, number[]>; failures: number }> {
    const answer = once(this.#worker, 'message')
    this.#worker.postMessage({ stop: true })
    const [{ samples, failures }] = (await answer) as [
      { samples: Record<string, number[]>; failures: number },
    ]
    await this.#worker.terminate()
    return { samples: new Map(Object.entries(samples)), failures }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** 12 concurrent readers page through `GET /v1/manifests?limit=500`, each to the end. */
async function listReads(session: Session, key: string): Promise<WorstCasePhase['listRead']> {
  const started = performance.now()
  let pages = 0
  let largestPageBytes = 0
  await Promise.all(
    Array.from({ length: LIST_READS }, async () => {
      let cursor: string | null = null
      for (let page = 0; page < 1000; page++) {
        const path = `/v1/manifests?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
        const res = await call(session, 'manifest list', key, 'GET', path)
        if (res.status !== 200) return
        pages++
        largestPageBytes = Math.max(largestPageBytes, Buffer.byteLength(res.text))
        cursor = (JSON.parse(res.text) as { next_cursor: string | null }).next_cursor
        if (cursor === null) return
      }
    }),
  )
  return { pages, largestPageBytes, seconds: (performance.now() - started) / 1000 }
}

/** 300 streams opened with one key from the start of the log, held for two seconds, then closed. */
async function streams(origin: string, key: string): Promise<WorstCasePhase['streams']> {
  const statuses: Record<string, number> = {}
  const pool = new Pool(origin, {
    connections: STREAMS,
    pipelining: 1,
    headersTimeout: 60_000,
    bodyTimeout: 0,
  })
  const controllers = Array.from({ length: STREAMS }, () => new AbortController())
  try {
    await Promise.all(
      controllers.map(async (controller) => {
        try {
          const res = await pool.request({
            method: 'GET',
            path: '/v1/manifests/stream',
            headers: { authorization: `Bearer ${key}`, 'last-event-id': '0' },
            signal: controller.signal,
          })
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
          if (res.statusCode !== 200) {
            await res.body.text()
            return
          }
          // Read what arrives for two seconds, then hang up.
          const stop = setTimeout(() => controller.abort(), 2000)
          try {
            for await (const _ of res.body) {
              // drained, not kept
            }
          } catch {
            // aborted
          } finally {
            clearTimeout(stop)
          }
        } catch {
          statuses.error = (statuses.error ?? 0) + 1
        }
      }),
    )
  } finally {
    await pool.destroy()
  }
  return { attempted: STREAMS, statuses }
}

export async function phaseWorstCase(options: {
  arbiter: RunningArbiter
  keys: { limits: string; dashboard: string }
  log: (message: string) => void
}): Promise<WorstCasePhase> {
  const { arbiter, keys, log } = options
  const session: Session = {
    pool: new Pool(arbiter.origin, {
      connections: CASES + LIST_READS,
      pipelining: 1,
      headersTimeout: 300_000,
      bodyTimeout: 300_000,
    }),
    statuses: {},
    serverErrors: {},
    largestManifestBytes: 0,
  }
  let part: WorstCasePart = 'cases'
  const pid = arbiter.proc.pid
  const cpu = { process: processCpuSeconds(pid) ?? 0, main: threadCpuSeconds(pid, pid) ?? 0 }
  const cpuOfParts = new Map<WorstCasePart, { process: number; main: number }>()
  /** Closes the CPU account of the part that is running. */
  const closeCpu = () => {
    const now = { process: processCpuSeconds(pid) ?? 0, main: threadCpuSeconds(pid, pid) ?? 0 }
    cpuOfParts.set(part, { process: now.process - cpu.process, main: now.main - cpu.main })
    Object.assign(cpu, now)
  }
  const loadAtStart = loadavg()[0]!
  const enter = (next: WorstCasePart) => {
    if (next !== part) closeCpu()
    part = next
    poller.enter(next)
    arbiter.memory.phase = `worst-case: ${next}`
  }
  const poller = new HealthzPoller(arbiter.origin, part)
  enter('cases')
  let samples = new Map<string, number[]>()
  const healthzFailures = { count: 0 }
  const tag = `worst-${process.pid}-${Date.now().toString(36)}`
  const cases = { fanouts: 11, outcomes: 11, reviews: 10 }
  let casesSeconds = 0
  let listRead: WorstCasePhase['listRead'] = { pages: 0, largestPageBytes: 0, seconds: 0 }
  let streamFigures: WorstCasePhase['streams'] = { attempted: STREAMS, statuses: {} }
  try {
    log(
      `worst case: ${CASES} cases at once (${cases.fanouts} fan-outs, ${cases.outcomes} outcomes, ${cases.reviews} reviews)`,
    )
    const started = performance.now()
    await Promise.all([
      ...Array.from({ length: cases.fanouts }, (_, i) =>
        fanoutAtTheLimits(session, keys.limits, `${tag}-f${i}`),
      ),
      ...Array.from({ length: cases.outcomes }, (_, i) =>
        outcomeAtTheLimits(session, keys.limits, `${tag}-o${i}`),
      ),
      ...Array.from({ length: cases.reviews }, (_, i) =>
        reviewAtTheLimits(session, keys.limits, `${tag}-r${i}`),
      ),
    ])
    casesSeconds = (performance.now() - started) / 1000
    log(`worst case: cases done in ${casesSeconds.toFixed(1)} s; ${LIST_READS} list readers at limit=500`)
    enter('list reads')
    listRead = await listReads(session, keys.dashboard)
    log(`worst case: ${listRead.pages} pages read; ${STREAMS} streams with one key`)
    enter('streams')
    streamFigures = await streams(arbiter.origin, keys.dashboard)
  } finally {
    closeCpu()
    const polled = await poller.stop()
    samples = polled.samples
    healthzFailures.count = polled.failures
    await session.pool.close()
  }
  arbiter.memory.sample()
  const parts = Object.fromEntries(
    WORST_CASE_PARTS.map((name) => [
      name,
      {
        peakRssBytes: arbiter.memory.phasePeaks.get(`worst-case: ${name}`) ?? 0,
        healthz: summarize(samples.get(name) ?? [0]),
        healthzSamples: samples.get(name)?.length ?? 0,
        cpuSeconds: cpuOfParts.get(name)?.process ?? 0,
        mainThreadCpuSeconds: cpuOfParts.get(name)?.main ?? 0,
      },
    ]),
  ) as WorstCasePhase['parts']
  const peakRssBytes = Math.max(...Object.values(parts).map((p) => p.peakRssBytes))
  const healthz = summarize([...samples.values()].flat())
  const processAlive = alive(arbiter.proc.pid)
  const serverErrors = Object.values(session.serverErrors).reduce((a, b) => a + b, 0)
  const pass =
    peakRssBytes < WORST_CASE_TARGETS.peakRssBytes &&
    healthz.p99 <= WORST_CASE_TARGETS.healthzP99Ms &&
    serverErrors === 0 &&
    healthzFailures.count === 0 &&
    processAlive
  return {
    cases,
    casesSeconds,
    peakRssBytes,
    healthz,
    healthzUnanswered: healthzFailures.count,
    parts,
    serverErrors: session.serverErrors,
    statuses: session.statuses,
    processAlive,
    largestManifestBytes: session.largestManifestBytes,
    listRead,
    streams: streamFigures,
    loadAverage: { start: loadAtStart, end: loadavg()[0]! },
    result: pass ? 'PASS' : 'MISS',
  }
}

export function printWorstCase(phase: WorstCasePhase): void {
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`
  const f = (value: number) => value.toFixed(1)
  const statuses = Object.entries(phase.statuses)
    .map(
      ([label, byStatus]) =>
        `    ${label}: ${Object.entries(byStatus)
          .map(([s, n]) => `${s}×${n}`)
          .join(' ')}`,
    )
    .join('\n')
  process.stdout.write(
    `\nWorst case the limits allow: ${CASES} cases at once, then ${LIST_READS} list readers and ${STREAMS} streams with one key\n` +
      `  cases done in:          ${f(phase.casesSeconds)} s\n` +
      `  peak RSS:               ${mb(phase.peakRssBytes)} (target < ${mb(WORST_CASE_TARGETS.peakRssBytes)})\n` +
      `  /healthz delay:         p50 ${f(phase.healthz.p50)} ms, p99 ${f(phase.healthz.p99)} ms, max ${f(phase.healthz.max)} ms (target p99 ≤ ${WORST_CASE_TARGETS.healthzP99Ms} ms)\n` +
      WORST_CASE_PARTS.map(
        (name) =>
          `    ${name.padEnd(20)}peak RSS ${mb(phase.parts[name].peakRssBytes)}, /healthz p99 ${f(phase.parts[name].healthz.p99)} ms, max ${f(phase.parts[name].healthz.max)} ms (${phase.parts[name].healthzSamples} polls); CPU ${f(phase.parts[name].cpuSeconds)} s, main thread ${f(phase.parts[name].mainThreadCpuSeconds)} s\n`,
      ).join('') +
      `  machine load average:   ${phase.loadAverage.start.toFixed(1)} at the start, ${phase.loadAverage.end.toFixed(1)} at the end\n` +
      `  answers ≥ 500 but 503:  ${JSON.stringify(phase.serverErrors)} (target none)\n` +
      `  process alive after:    ${phase.processAlive} (/healthz unanswered ${phase.healthzUnanswered} times)\n` +
      `  largest manifest:       ${phase.largestManifestBytes} bytes\n` +
      `  list reads:             ${phase.listRead.pages} pages in ${f(phase.listRead.seconds)} s, largest page ${phase.listRead.largestPageBytes} bytes\n` +
      `  streams (one key):      ${JSON.stringify(phase.streams.statuses)} of ${phase.streams.attempted}\n` +
      `  answers:\n${statuses}\n` +
      `  → ${phase.result}\n`,
  )
}
