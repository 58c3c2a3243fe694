/**
 * The embedded database against PostgreSQL, side by side, on the decide flow.
 *
 *   npx tsx bench/embedded-load.ts
 *
 * Builds dist/ (production runs the compiled output), then runs `node dist/server.js` in two modes, one after the
 * other, each on a fresh data directory:
 * - embedded (no DATABASE_URL): a first start creates the database in the data directory and stops (its time to
 *   ready and peak memory are reported as "first start" and "create peak"); the measured server is a second start
 *   on that directory, as after any restart in production (its time to ready: "restart");
 * - postgres: DATABASE_URL names a database created for the run on the local PostgreSQL (dropped at the end).
 * Each is driven with autocannon through the decide flow — POST /v1/outcomes, an interpretation from orch-a
 * ('failure') and one from orch-b ('success'), POST …/evaluate — for a warm-up and then a measured window, and the
 * script prints, per mode: requests/s and p50/p99 of every request; the service's resident memory (summed over
 * its process and any child it started, the embedded database's process): its peak while starting, its peak under
 * load (polled every 100 ms) and at the end; the CPU its main thread and its other threads (its children's too)
 * used per wall second of the measured window, and the busiest of the other threads alone (the embedded
 * database's) with its share of kernel time; and CPU per request, of the service and (postgres mode) of the
 * PostgreSQL processes serving its database: on a shared machine, a steadier figure than requests/s.
 *
 * The machine is shared and noisy: compare the two modes of one run (the ratio line), not absolute figures
 * across runs.
 *
 * Knobs: BENCH_DURATION_S (10), BENCH_WARMUP_S (3), BENCH_CONNECTIONS (10), BENCH_MODES (embedded,postgres),
 * BENCH_PG_ADMIN_URL (postgres://postgres@127.0.0.1:5432/test), BENCH_SKIP_BUILD=1 (dist/ is already built);
 * investigation only: BENCH_NODE_ARGS (extra node flags for the server, space-separated), BENCH_KEEP_DATA_DIR
 * (a path: the embedded data dir the run filled is copied there before it is removed, to profile the CLI on it).
 */
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import { buildForBench } from './build.ts'
import { type CliTiming, printCliTimings, timeCliCommands } from './cli-timings.ts'
import { type BenchDatabase, createDatabase } from './database.ts'
import { HttpTarget, type LatencySummary, summarize } from './load.ts'
import { CpuWindow, freePort, type ManagedProcess, startProcess, waitReady } from './processes.ts'
import { productionNodeFlags } from './servers.ts'
import { createKey, makeEvidence, SUCCESS_CRITERION } from './workloads.ts'

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..')
// Run as a script, these come from the environment; `compareEmbedded` (the bench's embedded phase) sets them.
let durationS = Number(process.env.BENCH_DURATION_S ?? 10)
let warmupS = Number(process.env.BENCH_WARMUP_S ?? 3)
let connections = Number(process.env.BENCH_CONNECTIONS ?? 10)
const modes = (process.env.BENCH_MODES ?? 'embedded,postgres').split(',') as Mode[]
let adminUrl = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

export type Mode = 'embedded' | 'postgres'

export interface ModeResult {
  mode: Mode
  requestsPerSecond: number
  latency: LatencySummary
  non2xx: number
  errors: number
  /** Peak resident memory of the first start that created the embedded database, bytes (embedded only). */
  createPeakBytes: number | null
  /** From spawning that first start to its first 200 on /readyz, ms (embedded only). */
  firstStartReadyMs: number | null
  /** The same for the measured start (embedded: a restart on the existing data dir), ms. */
  startReadyMs: number
  /** Peak resident memory of the service (every process of it) until it answered ready, bytes. */
  startPeakBytes: number
  /** Peak resident memory during warm-up and the measured window, bytes. */
  loadPeakBytes: number
  /** Resident memory at the end of the measured window, bytes. */
  endRssBytes: number
  /** CPU seconds per wall second over the measured window. */
  mainThreadCores: number
  otherThreadsCores: number
  /** The busiest thread but the main one (the embedded database's): cores, and the share spent in the kernel. */
  busiestOtherCores: number
  busiestOtherKernelShare: number
  /** CPU per successful request, ms: the whole service, and the PostgreSQL processes serving its database. */
  serviceCpuMsPerRequest: number
  postgresCpuMsPerRequest: number
  /** `verify`, `keys list` and `audit verify` on the data dir the run filled (embedded only). */
  cli: CliTiming[] | null
}

/** Runs of each CLI command. */
const CLI_RUNS = 5

/** A signed envelope and the JWKS that verifies it, written beside the data dir for `arbiter verify`. */
async function verifyInputs(
  origin: string,
  adminKey: string,
  dataDir: string,
): Promise<{ envelope: string; jwks: string }> {
  const page = (await (
    await fetch(`${origin}/v1/manifests?limit=1`, { headers: { authorization: `Bearer ${adminKey}` } })
  ).json()) as { items: unknown[] }
  if (page.items.length === 0) throw new Error('no manifest to verify: the decide flow issued none')
  const jwks = await (await fetch(`${origin}/.well-known/jwks.json`)).text()
  const files = { envelope: `${dataDir}-envelope.json`, jwks: `${dataDir}-jwks.json` }
  await writeFile(files.envelope, JSON.stringify(page.items[0]))
  await writeFile(files.jwks, jwks)
  return files
}

async function main(): Promise<void> {
  buildForBench([repoRoot])
  const results: ModeResult[] = []
  for (const mode of modes) results.push(await measure(mode))
  print(results)
}

/**
 * Both modes, one after the other, for `npm run bench` (BENCH_PHASES=embedded), on the dist/ the run built:
 * prints the comparison and returns it.
 */
export async function compareEmbedded(options: {
  durationS: number
  warmupS: number
  connections: number
  adminUrl: string
}): Promise<ModeResult[]> {
  durationS = options.durationS
  warmupS = options.warmupS
  connections = options.connections
  adminUrl = options.adminUrl
  const results: ModeResult[] = []
  for (const mode of ['embedded', 'postgres'] as const) results.push(await measure(mode))
  print(results)
  return results
}

async function measure(mode: Mode): Promise<ModeResult> {
  let database: BenchDatabase | undefined
  if (mode === 'postgres') database = await createDatabase(adminUrl, 'embedded_cmp')
  const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-embedded-load-'))
  const adminKey = randomBytes(30).toString('base64url')
  try {
    let createPeakBytes: number | null = null
    let firstStartReadyMs: number | null = null
    if (mode === 'embedded') {
      const first = await startServer(mode, dataDir, adminKey, undefined)
      createPeakBytes = first.memory.peakBytes
      firstStartReadyMs = first.readyMs
      first.memory.stop()
      await first.proc.stop()
      log(
        `embedded: created the database (ready in ${firstStartReadyMs.toFixed(0)} ms, peak ${mb(createPeakBytes)}), restarting on it`,
      )
    }
    const { proc, memory, readyMs: startReadyMs } = await startServer(mode, dataDir, adminKey, database)
    try {
      const startPeakBytes = memory.peakBytes
      memory.resetPeak()
      const target = new HttpTarget(proc.origin, 2)
      const keys = {
        a: await createKey(target, adminKey, {
          role: 'orchestrator',
          orchestrator_ids: ['orch-a'],
          label: 'a',
        }),
        b: await createKey(target, adminKey, {
          role: 'orchestrator',
          orchestrator_ids: ['orch-b'],
          label: 'b',
        }),
      }
      await target.close()
      log(`${mode}: pid ${proc.pid}, warm-up ${warmupS}s`)
      await decideFlow(proc, keys, warmupS)
      log(`${mode}: measuring ${durationS}s with ${connections} connections`)
      const cpu = new ThreadCpu(proc.pid)
      const postgresCpu = database
        ? await CpuWindow.start(proc.pid, { adminUrl, database: database.name })
        : undefined
      const run = await decideFlow(proc, keys, durationS)
      const { mainThreadCores, otherThreadsCores, busiestOtherCores, busiestOtherKernelShare, wallS } =
        cpu.end()
      const postgresCpuS = postgresCpu ? (await postgresCpu.end()).postgresCpuS : 0
      const requests = run.latency.count
      memory.sample()
      // The CLI on this data dir once the service has stopped (one process at a time opens it): the files the
      // offline verify reads are fetched first.
      let cli: CliTiming[] | null = null
      if (mode === 'embedded') {
        const files = await verifyInputs(proc.origin, adminKey, dataDir)
        memory.stop()
        await proc.stop()
        cli = timeCliCommands({
          root: repoRoot,
          env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ARBITER_DATA_DIR: dataDir },
          commands: [
            { name: 'verify', args: ['verify', files.envelope, '--jwks', files.jwks] },
            { name: 'keys list', args: ['keys', 'list'] },
            { name: 'audit verify', args: ['audit', 'verify'] },
          ],
          runs: CLI_RUNS,
        })
      }
      return {
        cli,
        mode,
        ...run,
        createPeakBytes,
        firstStartReadyMs,
        startReadyMs,
        startPeakBytes,
        loadPeakBytes: memory.peakBytes,
        endRssBytes: memory.lastRssBytes,
        mainThreadCores,
        otherThreadsCores,
        busiestOtherCores,
        busiestOtherKernelShare,
        serviceCpuMsPerRequest: ((mainThreadCores + otherThreadsCores) * wallS * 1000) / requests,
        postgresCpuMsPerRequest: (postgresCpuS * 1000) / requests,
      }
    } catch (err) {
      process.stderr.write(`${proc.logTail()}\n`)
      throw err
    } finally {
      memory.stop()
      await proc.stop()
    }
  } finally {
    const keep = process.env.BENCH_KEEP_DATA_DIR
    if (mode === 'embedded' && keep) {
      // Not the socket directory: a new start makes its own.
      await cp(dataDir, keep, { recursive: true, filter: (path) => path !== join(dataDir, 'socket') })
    }
    await rm(dataDir, { recursive: true, force: true })
    await rm(`${dataDir}-envelope.json`, { force: true })
    await rm(`${dataDir}-jwks.json`, { force: true })
    await database?.drop()
  }
}

/** `node dist/server.js`, ready once GET /readyz answers 200, its memory polled from the moment it starts. */
async function startServer(
  mode: Mode,
  dataDir: string,
  adminKey: string,
  database: BenchDatabase | undefined,
): Promise<{ proc: ManagedProcess; memory: ServiceMemory; readyMs: number }> {
  const port = await freePort()
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    PORT: String(port),
    HOST: '127.0.0.1',
    ARBITER_DATA_DIR: dataDir,
    ARBITER_BOOTSTRAP_ADMIN_KEY: adminKey,
    ARBITER_RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
  }
  if (database) env.DATABASE_URL = database.url
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)
  const spawnedAt = performance.now()
  const proc = startProcess({
    name: `arbiter (${mode})`,
    args: [...productionNodeFlags(repoRoot), ...nodeArgs, 'dist/server.js'],
    cwd: repoRoot,
    env,
    port,
  })
  const memory = new ServiceMemory(proc.pid)
  try {
    await waitReady(proc, '/readyz')
  } catch (err) {
    memory.stop()
    await proc.stop()
    throw err
  }
  const readyMs = performance.now() - spawnedAt
  memory.sample()
  return { proc, memory, readyMs }
}

// The request options autocannon@8 accepts beyond bench/types' declaration: a response hook with per-connection
// context, which carries the outcome id from the create call to the three calls after it.
interface FlowRequest {
  method: string
  path?: string
  headers: Record<string, string>
  setupRequest: (request: FlowRequest, context: FlowContext) => FlowRequest | null
  onResponse?: (status: number, body: string, context: FlowContext) => void
}
type FlowContext = { outcomeId?: string }

let runCounter = 0

/** Runs the decide flow on every connection for `seconds`: every request of it counts, each must answer 2xx. */
async function decideFlow(
  proc: ManagedProcess,
  keys: { a: string; b: string },
  seconds: number,
): Promise<Pick<ModeResult, 'requestsPerSecond' | 'latency' | 'non2xx' | 'errors'>> {
  const evidence = makeEvidence(1024)
  const json = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })
  const interpretation = (key: string, orchestrator: string, fails: boolean): FlowRequest => ({
    method: 'POST',
    headers: json(key),
    setupRequest: (request, context) =>
      context.outcomeId === undefined
        ? null
        : ({
            ...request,
            path: `/v1/outcomes/${context.outcomeId}/interpretations`,
            body: JSON.stringify({
              orchestrator_id: orchestrator,
              success_criterion: SUCCESS_CRITERION,
              outcome_interpretation: fails ? 'failure' : 'success',
              intended_action: { kind: fails ? 'compensate' : 'proceed', resources: ['refund:r'] },
              rationale: fails ? 'receipt missing from ledger' : 'exit code 0 and receipt present',
            }),
          } as FlowRequest),
  })
  const requests: FlowRequest[] = [
    {
      method: 'POST',
      path: '/v1/outcomes',
      headers: json(keys.a),
      setupRequest: (request) =>
        ({
          ...request,
          body: JSON.stringify({
            subagent_id: `refund-agent-${runCounter % 8}`,
            run_id: `embedded-load-${process.pid}-${++runCounter}`,
            evidence,
            expected_orchestrators: ['orch-a', 'orch-b'],
            arbiter_orchestrator_id: 'orch-a',
          }),
        }) as FlowRequest,
      onResponse: (status, body, context) => {
        context.outcomeId =
          status === 201 ? (JSON.parse(body) as { outcome_id: string }).outcome_id : undefined
      },
    },
    interpretation(keys.a, 'orch-a', true),
    interpretation(keys.b, 'orch-b', false),
    {
      method: 'POST',
      headers: json(keys.a),
      setupRequest: (request, context) =>
        context.outcomeId === undefined
          ? null
          : ({ ...request, path: `/v1/outcomes/${context.outcomeId}/evaluate`, body: '{}' } as FlowRequest),
    },
  ]
  const latencies: number[] = []
  let non2xx = 0
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: proc.origin,
        connections,
        duration: seconds,
        pipelining: 1,
        timeout: 30,
        requests: requests as unknown as autocannon.Request[],
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    )
    instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTimeMs)
      else non2xx += 1
    })
  })
  return {
    requestsPerSecond: latencies.length / result.duration,
    latency: summarize(latencies),
    non2xx,
    errors: result.errors,
  }
}

/**
 * Resident memory of the service: its process and every descendant (the embedded database's), polled every 100 ms
 * (each one's anonymous and shared-memory pages summed, file-backed pages counted once); plus, until `resetPeak()`, the sum of each process's own high-water mark (VmHWM), which catches a spike
 * between two polls (an upper bound: the processes' peaks need not coincide). The kernel's mark cannot be reset:
 * after `resetPeak()` only polls count.
 */
class ServiceMemory {
  peakBytes = 0
  lastRssBytes = 0
  private useHighWaterMark = true
  private readonly timer: NodeJS.Timeout

  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 100)
  }

  sample(): void {
    let ownPages = 0
    let filePages = 0
    let highWaterMarks = 0
    for (const pid of [this.pid, ...descendants(this.pid)]) {
      const status = readOrEmpty(`/proc/${pid}/status`)
      ownPages += kilobytes(status, 'RssAnon') + kilobytes(status, 'RssShmem')
      filePages = Math.max(filePages, kilobytes(status, 'RssFile'))
      highWaterMarks += kilobytes(status, 'VmHWM')
    }
    // Each process's anonymous pages are its own; its file-backed ones are mostly the node binary and libraries,
    // which the processes of the service share: counted once, as the largest of them.
    const rss = ownPages + filePages
    if (this.useHighWaterMark) this.peakBytes = Math.max(this.peakBytes, highWaterMarks)
    if (rss === 0) return
    this.lastRssBytes = rss
    this.peakBytes = Math.max(this.peakBytes, rss)
  }

  resetPeak(): void {
    this.useHighWaterMark = false
    this.peakBytes = this.lastRssBytes
  }

  stop(): void {
    clearInterval(this.timer)
  }
}

function descendants(pid: number): number[] {
  const children = readOrEmpty(`/proc/${pid}/task/${pid}/children`).split(' ').filter(Boolean).map(Number)
  return children.flatMap((child) => [child, ...descendants(child)])
}

/**
 * CPU of the server's main thread (its tid is its pid) and of every other thread of the process and of its
 * children over a window, and of the busiest other thread alone (in embedded mode, the main thread of the
 * database's process), with the share of it spent in the kernel (socket and file system calls).
 */
class ThreadCpu {
  private readonly started = performance.now()
  private readonly start: Map<number, { user: number; system: number }>

  constructor(private readonly pid: number) {
    this.start = threadCpu(pid)
  }

  end(): {
    mainThreadCores: number
    otherThreadsCores: number
    busiestOtherCores: number
    busiestOtherKernelShare: number
    wallS: number
  } {
    const wallS = (performance.now() - this.started) / 1000
    let main = 0
    let others = 0
    let busiest = { user: 0, system: 0 }
    for (const [tid, now] of threadCpu(this.pid)) {
      const before = this.start.get(tid) ?? { user: 0, system: 0 }
      const used = { user: now.user - before.user, system: now.system - before.system }
      if (tid === this.pid) main += used.user + used.system
      else {
        others += used.user + used.system
        if (used.user + used.system > busiest.user + busiest.system) busiest = used
      }
    }
    const busiestTotal = busiest.user + busiest.system
    return {
      mainThreadCores: main / wallS,
      otherThreadsCores: others / wallS,
      busiestOtherCores: busiestTotal / wallS,
      busiestOtherKernelShare: busiestTotal > 0 ? busiest.system / busiestTotal : 0,
      wallS,
    }
  }
}

function threadCpu(pid: number): Map<number, { user: number; system: number }> {
  const cpu = new Map<number, { user: number; system: number }>()
  const tasks = [pid, ...descendants(pid)].flatMap((process) =>
    readdirOrEmpty(`/proc/${process}/task`).map((tid) => `/proc/${process}/task/${tid}`),
  )
  for (const task of tasks) {
    const tid = Number(task.slice(task.lastIndexOf('/') + 1))
    const stat = readOrEmpty(`${task}/stat`)
    // After the ") " that ends the command name: utime and stime are fields 14 and 15, in clock ticks (1/100 s).
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')
    if (fields.length > 12) cpu.set(tid, { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 })
  }
  return cpu
}

function readdirOrEmpty(path: string): string[] {
  try {
    return readdirSync(path)
  } catch {
    return []
  }
}

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return ''
  }
}

function kilobytes(status: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)
  return match ? Number(match[1]) * 1024 : 0
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(0)} MB`
}

function print(results: ModeResult[]): void {
  const rows = results.map((r) => [
    r.mode,
    r.requestsPerSecond.toFixed(1),
    r.latency.p50.toFixed(1),
    r.latency.p99.toFixed(1),
    r.firstStartReadyMs === null ? '-' : `${(r.firstStartReadyMs / 1000).toFixed(1)} s`,
    r.createPeakBytes === null ? '-' : mb(r.createPeakBytes),
    `${(r.startReadyMs / 1000).toFixed(1)} s`,
    mb(r.startPeakBytes),
    mb(r.loadPeakBytes),
    mb(r.endRssBytes),
    r.mainThreadCores.toFixed(2),
    r.otherThreadsCores.toFixed(2),
    `${r.busiestOtherCores.toFixed(2)} (${(r.busiestOtherKernelShare * 100).toFixed(0)}% sys)`,
    r.serviceCpuMsPerRequest.toFixed(2),
    r.postgresCpuMsPerRequest.toFixed(2),
    String(r.non2xx + r.errors),
  ])
  const header = [
    'mode',
    'req/s',
    'p50 ms',
    'p99 ms',
    'first start',
    'create peak',
    'start',
    'start peak',
    'load peak',
    'end RSS',
    'main cpu',
    'other cpu',
    'busiest other',
    'cpu ms/req',
    'pg cpu ms/req',
    'failed',
  ]
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)))
  for (const row of [header, ...rows])
    process.stdout.write(`${row.map((c, i) => c.padEnd(widths[i]!)).join('  ')}\n`)
  for (const r of results) if (r.cli) printCliTimings(r.cli)
  const embedded = results.find((r) => r.mode === 'embedded')
  const postgres = results.find((r) => r.mode === 'postgres')
  if (embedded && postgres) {
    const ratio = embedded.requestsPerSecond / postgres.requestsPerSecond
    process.stdout.write(`embedded / postgres throughput: ${ratio.toFixed(2)}×\n`)
  }
}

function log(message: string): void {
  process.stdout.write(`${new Date().toISOString().slice(11, 19)}  ${message}\n`)
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`)
    process.exit(1)
  })
}
