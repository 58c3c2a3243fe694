import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** What one bench run measures and how long, from BENCH_* variables (see bench/README.md). */
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..')

function numberEnv(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${raw}`)
  return value
}

function listEnv(name: string, fallback: string[]): string[] {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
}

const durationS = numberEnv('BENCH_DURATION_S', 10)
/** Every phase, in the order a run takes them. */
export const PHASES = [
  'decide',
  'review',
  'reconcile',
  'read',
  'scale',
  'large-bodies',
  'worst-case',
  'webhooks',
  'audit',
  'embedded',
]

export const cfg = {
  durationS,
  warmupS: Math.min(3, Math.max(1, Math.round(durationS / 5))),
  /**
   * The decide phase runs first, on servers just started: its warm-up is their whole warm-up. With 2 s, its first
   * round read Arbiter's throughput ratio lowest in every run (0.37–0.49× in eight runs of 2026-12-05; with 8 s,
   * 0.46–0.57× in three, each within 0.1 of its other rounds).
   */
  decideWarmupS: numberEnv('BENCH_DECIDE_WARMUP_S', Math.min(8, durationS)),
  scaleS: Math.max(2, durationS / 2),
  auditS: Math.max(2, durationS / 2),
  connections: Math.round(numberEnv('BENCH_CONNECTIONS', 16)),
  scaleLoops: Math.round(numberEnv('BENCH_SCALE_LOOPS', 4)),
  decideRounds: Math.round(numberEnv('BENCH_DECIDE_ROUNDS', 3)),
  auditConnections: Math.round(numberEnv('BENCH_AUDIT_CONNECTIONS', 4)),
  poolMax: Math.round(numberEnv('BENCH_POOL_MAX', 10)),
  auditLevels: listEnv('BENCH_AUDIT_LEVELS', ['10000', '100000', '1000000']).map(Number),
  phases: new Set(listEnv('BENCH_PHASES', PHASES)),
  /** The read phase's conditions: request logging off at both sides, on at both. */
  readLogging: listEnv('BENCH_READ_LOGGING', ['off', 'on']),
  // Investigation only: measure without ANALYZE before each window (run-context.ts, analyzedLikeProduction).
  freshPlans: process.env.BENCH_FRESH_PLANS === '1',
  // Investigation only: run the Arbiter of another checkout (e.g. a worktree with a candidate fix).
  arbiterRoot: process.env.BENCH_ARBITER_ROOT ?? repoRoot,
  adminUrl: process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  dbSettings: Object.fromEntries(
    listEnv('BENCH_DB_SETTINGS', []).map((pair) => {
      const [name, ...value] = pair.split('=')
      return [name!.trim(), value.join('=').trim()]
    }),
  ) as Record<string, string>,
  // The measured Arbiter traces every request (100% sampling) to a local OTLP/HTTP receiver (otlp-sink.ts).
  tracing: process.env.BENCH_TRACING === '1',
  cpuProfileDir:
    process.env.BENCH_CPU_PROF === '1' ? join(repoRoot, 'bench', 'results', 'profiles') : undefined,
}

if (cfg.decideRounds % 2 === 0) {
  throw new Error(`BENCH_DECIDE_ROUNDS must be odd (the median of its rounds), got ${cfg.decideRounds}`)
}

for (const phase of cfg.phases) {
  if (!PHASES.includes(phase))
    throw new Error(`BENCH_PHASES: unknown phase ${phase} (known: ${PHASES.join(', ')})`)
}

for (const condition of cfg.readLogging) {
  if (condition !== 'off' && condition !== 'on')
    throw new Error(`BENCH_READ_LOGGING: unknown condition ${condition} (known: off, on)`)
}

/** Up to the most orchestrators an outcome may have (docs/limits.md). */
export const SCALE_ORCHESTRATORS = [2, 4, 8, 16]
export const SCALE_EVIDENCE_BYTES = [1024, 64 * 1024, 512 * 1024]
export const TARGETS = {
  decideThroughputRatio: 0.5,
  decideP99Ratio: 3,
  /** Server CPU per decide request over the baseline's, both offered the same request rate. */
  decideServerCpuRatio: 1.5,
  /** GET /v1/manifests/{id} over GET /select, with request logging off at both sides and on at both. */
  readThroughputRatio: 0.8,
  auditQueryP95Ms: 25,
  verifyRecordsPerS: 100_000,
  rssBytes: 256 * 1024 * 1024,
  reviewThroughputRatio: 0.5,
  reconcileThroughputRatio: 0.4,
  reconcileScaleExponent: 1.5,
  sequencingLagP99Ms: 100,
  proofP95Ms: 10,
  embeddedThroughputRatio: 0.6,
  /** Decide throughput with three webhooks subscribed to every event over none: within 10 %. */
  webhooksThroughputRatio: 0.9,
  embeddedRssBytes: 300 * 1024 * 1024,
  /** A first start on an empty data dir (creating the embedded database): ready within, and its peak RSS. */
  embeddedFirstStartMs: 5_000,
  embeddedFirstStartRssBytes: 300 * 1024 * 1024,
}
