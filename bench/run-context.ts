import { cfg } from './config.ts'
import type { BenchDatabase } from './database.ts'
import { analyzeDatabase, databaseUrl, withClient } from './database.ts'
import {
  type CannonResult,
  cannon,
  type HttpTarget,
  type LatencySummary,
  type LoopResult,
  runLoops,
  summarize,
} from './load.ts'
import { CpuWindow, type MemorySampler } from './processes.ts'
import type { RunningArbiter, RunningServer } from './servers.ts'
import type { EvidenceItem } from './workloads.ts'

// Cleanup: everything started is stopped and every database created is dropped, on success, error and SIGINT.

const cleanups: { name: string; run: () => Promise<void> }[] = []
let cleaning: Promise<void> | null = null

export function onCleanup(name: string, run: () => Promise<void>): void {
  cleanups.push({ name, run })
}

export function cleanupAll(): Promise<void> {
  cleaning ??= (async () => {
    for (const { name, run } of [...cleanups].reverse()) {
      try {
        await run()
      } catch (err) {
        process.stderr.write(`cleanup (${name}) failed: ${(err as Error).message}\n`)
      }
    }
  })()
  return cleaning
}

/** Stops what was started and drops the databases when the run is interrupted. */
export function cleanUpOnSignals(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping the servers and dropping the bench databases…\n`)
      void cleanupAll().finally(() => process.exit(130))
    })
  }
}

export function log(message: string): void {
  process.stdout.write(`${new Date().toISOString().slice(11, 19)}  ${message}\n`)
}

// Shared state of one run, and measured windows (throughput and latency with the CPU each side used).

export interface Run {
  mainDb: BenchDatabase
  baseline: RunningServer
  baselineMemory: MemorySampler
  baseTarget: HttpTarget
  arbiter: RunningArbiter
  arbTarget: HttpTarget
  keys: { orchA: string; orchB: string; scout: string; admin: string }
  evidence1k: EvidenceItem[]
  manifestIds: string[]
  memories: { name: string; sampler: MemorySampler }[]
}

export interface LoopFigures {
  requestsPerSecond: number
  iterations: number
  elapsedS: number
  failedRequests: number
  failedIterations: number
  failureExamples: string[]
  latency: LatencySummary
  byCall: Record<string, LatencySummary>
  cpu: CpuFigures
}

/** Where the CPU went during a measured window (the machine has few cores: who saturates first matters). */
export interface CpuFigures {
  /** Server process CPU per successful request, ms. */
  serverMsPerRequest: number
  /** Server process CPU seconds per wall second (1.0 = one core busy all the time). */
  serverCores: number
  /** The part of serverMsPerRequest spent in the kernel (socket reads and writes, mostly), ms. */
  serverSystemMsPerRequest: number
  /** PostgreSQL processes serving the bench database (its backends, WAL writer, checkpointer), per request, ms. */
  postgresMsPerRequest: number
  postgresCores: number
}

export function cpuFigures(usage: Awaited<ReturnType<CpuWindow['end']>>, requests: number): CpuFigures {
  return {
    serverMsPerRequest: (usage.serverCpuS * 1000) / requests,
    serverCores: usage.serverCpuS / usage.wallS,
    serverSystemMsPerRequest: (usage.serverSystemS * 1000) / requests,
    postgresMsPerRequest: (usage.postgresCpuS * 1000) / requests,
    postgresCores: usage.postgresCpuS / usage.wallS,
  }
}

/**
 * Before a measured window (after its warm-up): the database analyzed as a running service's would be
 * (`analyzeDatabase`), unless BENCH_FRESH_PLANS=1 asks for the plans of a database that never was.
 */
async function analyzedLikeProduction(database: string): Promise<void> {
  if (!cfg.freshPlans) await analyzeDatabase(databaseUrl(cfg.adminUrl, database))
}

/** runLoops with the server's and PostgreSQL's CPU use over the same window. */
export async function measuredLoops(
  database: string,
  pid: number,
  options: Parameters<typeof runLoops>[0],
  iteration: Parameters<typeof runLoops>[1],
): Promise<LoopFigures> {
  await analyzedLikeProduction(database)
  const cpu = await CpuWindow.start(pid, { adminUrl: cfg.adminUrl, database })
  const result = await runLoops(options, iteration)
  return loopFigures(result, cpuFigures(await cpu.end(), result.rec.requests.length))
}

/** cannon with CPU figures, likewise. */
export async function measuredCannon(
  database: string,
  pid: number,
  options: Parameters<typeof cannon>[0],
): Promise<CannonResult & { cpu: CpuFigures }> {
  await analyzedLikeProduction(database)
  const cpu = await CpuWindow.start(pid, { adminUrl: cfg.adminUrl, database })
  const result = await cannon(options)
  return { ...result, cpu: cpuFigures(await cpu.end(), result.latency.count) }
}

function loopFigures(result: LoopResult, cpu: CpuFigures): LoopFigures {
  const byCall: Record<string, LatencySummary> = {}
  for (const label of result.rec.byLabel.keys()) byCall[label] = result.rec.summary(label)
  return {
    requestsPerSecond: result.requestsPerSecond,
    iterations: result.iterations,
    elapsedS: result.elapsedMs / 1000,
    failedRequests: result.rec.failedRequests,
    failedIterations: result.rec.failedIterations,
    failureExamples: result.rec.failureExamples,
    latency: summarize(result.rec.requests),
    byCall,
    cpu,
  }
}

/**
 * Rows for GET /select: those POST /insert3 wrote, topped up to 1000 with the same ~1 KB body when the decide
 * phase did not run. Returns the highest id (ids are 1..max, bigserial, no deletes).
 */
export async function baselineRows(run: Run): Promise<number> {
  return withClient(run.mainDb.url, async (client) => {
    await client.query(
      `INSERT INTO baseline_items (position, body)
       SELECT 1, $1::jsonb FROM generate_series(1, 1000 - (SELECT count(*) FROM baseline_items))`,
      [JSON.stringify(run.evidence1k)],
    )
    const { rows } = await client.query<{ max: string }>('SELECT max(id)::text AS max FROM baseline_items')
    return Number(rows[0]!.max)
  })
}

/** Spreads successive picks over [0, n) (a stride coprime with most n) so neighbours are not read in order. */
export function cycler<T>(values: readonly T[]): () => T {
  let i = 0
  return () => values[(i++ * 7919) % values.length]!
}
