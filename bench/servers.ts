import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BASELINE_BUILD_DIR } from './build.ts'
import { freePort, type ManagedProcess, MemorySampler, startProcess, waitReady } from './processes.ts'

/** The two servers under test, each a child process started the way production starts it. */

export interface RunningServer {
  proc: ManagedProcess
  origin: string
  stop(): Promise<void>
}

export interface RunningArbiter extends RunningServer {
  memory: MemorySampler
  /** ARBITER_BOOTSTRAP_ADMIN_KEY: 40 random characters. */
  adminKey: string
}

// A clean environment: nothing from the caller's shell (a stray ARBITER_SIGNING_KEY, LOG_LEVEL…) leaks in.
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const name of ['PATH', 'HOME', 'LANG', 'TMPDIR']) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  return env
}

/**
 * The node flags production starts the service with: those of `npm start` in `repoRoot`'s package.json (the
 * Dockerfile's CMD carries the same), so that every Arbiter the bench measures runs with the same heap settings.
 */
export function productionNodeFlags(repoRoot: string): string[] {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    scripts?: { start?: string }
  }
  const words = (pkg.scripts?.start ?? '').split(/\s+/)
  return words[0] === 'node' ? words.slice(1).filter((word) => word.startsWith('--')) : []
}

/** `node dist/server.js` (built by `buildForBench`, with production's node flags) on `databaseUrl`, ready once GET
 * /readyz answers 200. */
export async function startArbiter(options: {
  repoRoot: string
  databaseUrl: string
  poolMax: number
  name: string
  /** Write a V8 CPU profile of the server here when it stops (BENCH_CPU_PROF=1). */
  cpuProfileDir?: string | undefined
  /** Trace every request to this OTLP/HTTP endpoint (BENCH_TRACING=1); unset, tracing is off. */
  otlpEndpoint?: string | undefined
  /** Variables a phase needs on top of the bench's own (the webhooks phase's loopback receivers). */
  env?: Record<string, string>
  /** LOG_LEVEL; `warn` unless given (`info` is the service's default: a line per request). */
  logLevel?: string
  /** Where the server's stdout, its log lines, goes; unset, to the bench (which keeps the last lines for errors). */
  stdoutFile?: string
}): Promise<RunningArbiter> {
  const port = await freePort()
  const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-bench-'))
  const adminKey = randomBytes(30).toString('base64url')
  const profile = options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`] : []
  const proc = startProcess({
    name: options.name,
    args: [...productionNodeFlags(options.repoRoot), ...profile, 'dist/server.js'],
    cwd: options.repoRoot,
    port,
    stdoutFile: options.stdoutFile,
    env: {
      ...baseEnv(),
      DATABASE_URL: options.databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      ARBITER_DATA_DIR: dataDir,
      ARBITER_BOOTSTRAP_ADMIN_KEY: adminKey,
      ARBITER_RATE_LIMIT_PER_MINUTE: '0',
      // The default, stated so the baseline's pool is provably the same size.
      ARBITER_DB_POOL_MAX: String(options.poolMax),
      LOG_LEVEL: options.logLevel ?? 'warn',
      ...(options.otlpEndpoint
        ? { OTEL_EXPORTER_OTLP_ENDPOINT: options.otlpEndpoint, OTEL_TRACES_SAMPLER: 'always_on' }
        : {}),
      ...options.env,
    },
  })
  const memory = new MemorySampler(proc.pid, `${proc.origin}/metrics`)
  memory.start(200)
  const stop = async () => {
    memory.stop()
    await proc.stop()
    await rm(dataDir, { recursive: true, force: true })
  }
  try {
    await waitReady(proc, '/readyz')
  } catch (err) {
    await stop()
    throw err
  }
  return { proc, origin: proc.origin, memory, adminKey, stop }
}

/** bench/baseline-server.ts, compiled by `buildForBench`: bare fastify + pg with the same pool size, on the same database server. */
export async function startBaseline(options: {
  repoRoot: string
  databaseUrl: string
  poolMax: number
  name?: string
  /** BASELINE_LOG_LEVEL: unset, no logger; `info`, fastify's default request logging. */
  logLevel?: string
  /** Where its stdout, its log lines, goes (as startArbiter's). */
  stdoutFile?: string
}): Promise<RunningServer> {
  const port = await freePort()
  const proc = startProcess({
    name: options.name ?? 'baseline',
    args: [join(BASELINE_BUILD_DIR, 'baseline-server.js')],
    cwd: options.repoRoot,
    port,
    stdoutFile: options.stdoutFile,
    env: {
      ...baseEnv(),
      BASELINE_DATABASE_URL: options.databaseUrl,
      BASELINE_POOL_MAX: String(options.poolMax),
      PORT: String(port),
      ...(options.logLevel ? { BASELINE_LOG_LEVEL: options.logLevel } : {}),
    },
  })
  try {
    await waitReady(proc, '/readyz')
  } catch (err) {
    await proc.stop()
    throw err
  }
  return { proc, origin: proc.origin, stop: () => proc.stop() }
}
