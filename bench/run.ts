import { execFileSync } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { hashAuditRecord } from '../src/domain/shared/audit-chain.ts'
import {
  checkChainSeams,
  fillAuditLog,
  SYNTHETIC_ORCHESTRATORS,
  syntheticOrchestratorId,
} from './audit-fill.ts'
import { type BenchDatabase, createDatabase, withClient } from './database.ts'
import {
  type CannonResult,
  cannon,
  HttpTarget,
  type LatencySummary,
  type LoopResult,
  type Recorder,
  runLoops,
  summarize,
} from './load.ts'
import { CpuWindow, MemorySampler } from './processes.ts'
import { phaseReconcile, type ReconcilePhase } from './reconcile.ts'
import { type RunningArbiter, type RunningServer, startArbiter, startBaseline } from './servers.ts'
import { createKey, decidePath, type EvidenceItem, makeEvidence } from './workloads.ts'

/**
 * `npm run bench`: what Arbiter costs on top of the stack it runs on (fastify 5 + pg + PostgreSQL).
 *
 * Every throughput and latency figure is a ratio to a bare fastify + pg server (bench/baseline-server.ts)
 * measured in the same run, right before, with the same generator, concurrency and duration: the machine is
 * shared and noisy, so absolute numbers from different runs are not comparable. Phases:
 *
 * 1. decide  — the full orchestrator path (create, 2 interpretations, evaluate) vs POST /insert3
 * 2. read    — GET /v1/manifests/{id} vs GET /select
 * 3. scale   — decide latency as interpretations per outcome and evidence size grow
 * 4. reconcile — fan-outs (create, 20 results, reconcile) vs POST /insert3, and one reconcile at 10–1,000 claims
 *    on a fact (bench/reconcile.ts)
 * 5. audit   — filtered audit queries and chain verification at 10k, 100k and 1M records (synthetic history)
 * 6. memory  — peak RSS of each Arbiter process
 *
 * Env: BENCH_DURATION_S (10), BENCH_CONNECTIONS (16), BENCH_SCALE_LOOPS (4), BENCH_AUDIT_CONNECTIONS (4),
 * BENCH_POOL_MAX (10), BENCH_AUDIT_LEVELS (10000,100000,1000000), BENCH_PHASES (decide,read,scale,reconcile,audit),
 * BENCH_PG_ADMIN_URL (postgres://postgres@127.0.0.1:5432/test), BENCH_CPU_PROF=1 (V8 profiles of Arbiter in
 * bench/results/profiles), and for investigation only BENCH_DB_SETTINGS (`name=value,…` set on the bench
 * databases) and BENCH_ARBITER_ROOT (start the Arbiter of another checkout, e.g. a worktree with a candidate fix).
 */

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..')

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
const cfg = {
  durationS,
  warmupS: Math.min(3, Math.max(1, Math.round(durationS / 5))),
  scaleS: Math.max(2, durationS / 2),
  auditS: Math.max(2, durationS / 2),
  connections: Math.round(numberEnv('BENCH_CONNECTIONS', 16)),
  scaleLoops: Math.round(numberEnv('BENCH_SCALE_LOOPS', 4)),
  auditConnections: Math.round(numberEnv('BENCH_AUDIT_CONNECTIONS', 4)),
  poolMax: Math.round(numberEnv('BENCH_POOL_MAX', 10)),
  auditLevels: listEnv('BENCH_AUDIT_LEVELS', ['10000', '100000', '1000000']).map(Number),
  phases: new Set(listEnv('BENCH_PHASES', ['decide', 'read', 'scale', 'reconcile', 'audit'])),
  // Investigation only: run the Arbiter of another checkout (e.g. a worktree with a candidate fix).
  arbiterRoot: process.env.BENCH_ARBITER_ROOT ?? repoRoot,
  adminUrl: process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  dbSettings: Object.fromEntries(
    listEnv('BENCH_DB_SETTINGS', []).map((pair) => {
      const [name, ...value] = pair.split('=')
      return [name!.trim(), value.join('=').trim()]
    }),
  ) as Record<string, string>,
  cpuProfileDir:
    process.env.BENCH_CPU_PROF === '1' ? join(repoRoot, 'bench', 'results', 'profiles') : undefined,
}

const SCALE_ORCHESTRATORS = [2, 8, 32, 128]
const SCALE_EVIDENCE_BYTES = [1024, 64 * 1024, 512 * 1024]
const TARGETS = {
  decideThroughputRatio: 0.5,
  decideP99Ratio: 3,
  reconcileThroughputRatio: 0.4,
  readThroughputRatio: 0.7,
  auditQueryP95Ms: 25,
  verifyRecordsPerS: 100_000,
  rssBytes: 256 * 1024 * 1024,
}

// ---------------------------------------------------------------------------------------------------------
// Cleanup: everything started is stopped and every database created is dropped, on success, error and SIGINT.

const cleanups: { name: string; run: () => Promise<void> }[] = []
let cleaning: Promise<void> | null = null

function onCleanup(name: string, run: () => Promise<void>): void {
  cleanups.push({ name, run })
}

function cleanupAll(): Promise<void> {
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

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: stopping the servers and dropping the bench databases…\n`)
    void cleanupAll().finally(() => process.exit(130))
  })
}

function log(message: string): void {
  process.stdout.write(`${new Date().toISOString().slice(11, 19)}  ${message}\n`)
}

// ---------------------------------------------------------------------------------------------------------
// Shared state of one run.

interface Run {
  mainDb: BenchDatabase
  baseline: RunningServer
  baselineMemory: MemorySampler
  baseTarget: HttpTarget
  arbiter: RunningArbiter
  arbTarget: HttpTarget
  keys: { orchA: string; orchB: string; admin: string; scout: string }
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
interface CpuFigures {
  /** Server process CPU per successful request, ms. */
  serverMsPerRequest: number
  /** Server process CPU seconds per wall second (1.0 = one core busy all the time). */
  serverCores: number
  /** PostgreSQL processes serving the bench database (its backends, WAL writer, checkpointer), per request, ms. */
  postgresMsPerRequest: number
  postgresCores: number
}

function cpuFigures(usage: Awaited<ReturnType<CpuWindow['end']>>, requests: number): CpuFigures {
  return {
    serverMsPerRequest: (usage.serverCpuS * 1000) / requests,
    serverCores: usage.serverCpuS / usage.wallS,
    postgresMsPerRequest: (usage.postgresCpuS * 1000) / requests,
    postgresCores: usage.postgresCpuS / usage.wallS,
  }
}

/** runLoops with the server's and PostgreSQL's CPU use over the same window. */
async function measuredLoops(
  database: string,
  pid: number,
  options: Parameters<typeof runLoops>[0],
  iteration: Parameters<typeof runLoops>[1],
): Promise<LoopFigures> {
  const cpu = await CpuWindow.start(pid, { adminUrl: cfg.adminUrl, database })
  const result = await runLoops(options, iteration)
  return loopFigures(result, cpuFigures(await cpu.end(), result.rec.requests.length))
}

/** cannon with CPU figures, likewise. */
async function measuredCannon(
  database: string,
  pid: number,
  options: Parameters<typeof cannon>[0],
): Promise<CannonResult & { cpu: CpuFigures }> {
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

// ---------------------------------------------------------------------------------------------------------
// Phase 1: decide.

interface DecidePhase {
  loops: number
  baseline: LoopFigures
  arbiter: LoopFigures
  throughputRatio: number
  p50Ratio: number
  p99Ratio: number
}

async function phaseDecide(run: Run): Promise<DecidePhase> {
  const loops = cfg.connections
  const insert3Body = JSON.stringify(run.evidence1k)
  const insert3 = async (_loop: number, rec: Recorder) => {
    await run.baseTarget.call(rec, 'POST', '/insert3', { body: insert3Body, expect: [201], label: 'insert3' })
  }
  const decide = async (loop: number, rec: Recorder) => {
    const result = await decidePath(run.arbTarget, rec, {
      orchestrators: ['orch-a', 'orch-b'],
      creatorKey: run.keys.orchA,
      keyFor: (id) => (id === 'orch-a' ? run.keys.orchA : run.keys.orchB),
      evidence: run.evidence1k,
      expectAll: true,
      subagentId: `refund-agent-${loop % 8}`,
    })
    run.manifestIds.push(result.manifestId)
  }
  log(`decide: baseline POST /insert3, ${loops} loops, ${cfg.warmupS}s warm-up + ${cfg.durationS}s`)
  await runLoops({ loops, durationMs: cfg.warmupS * 1000 }, insert3)
  const baseline = await measuredLoops(
    run.mainDb.name,
    run.baseline.proc.pid,
    { loops, durationMs: cfg.durationS * 1000 },
    insert3,
  )
  log(`decide: Arbiter 4-call path, ${loops} loops, ${cfg.warmupS}s warm-up + ${cfg.durationS}s`)
  run.arbiter.memory.phase = 'decide'
  await runLoops({ loops, durationMs: cfg.warmupS * 1000 }, decide)
  const arbiter = await measuredLoops(
    run.mainDb.name,
    run.arbiter.proc.pid,
    { loops, durationMs: cfg.durationS * 1000 },
    decide,
  )
  return {
    loops,
    baseline,
    arbiter,
    throughputRatio: arbiter.requestsPerSecond / baseline.requestsPerSecond,
    p50Ratio: arbiter.latency.p50 / baseline.latency.p50,
    p99Ratio: arbiter.latency.p99 / baseline.latency.p99,
  }
}

// ---------------------------------------------------------------------------------------------------------
// Phase 2: read.

interface ReadPhase {
  connections: number
  manifestsCycled: number
  rowsCycled: number
  baseline: CannonResult & { cpu: CpuFigures }
  arbiter: CannonResult & { cpu: CpuFigures }
  throughputRatio: number
  p99Ratio: number
}

/**
 * Rows for GET /select: those POST /insert3 wrote, topped up to 1000 with the same ~1 KB body when the decide
 * phase did not run. Returns the highest id (ids are 1..max, bigserial, no deletes).
 */
async function baselineRows(run: Run): Promise<number> {
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
function cycler<T>(values: readonly T[]): () => T {
  let i = 0
  return () => values[(i++ * 7919) % values.length]!
}

async function phaseRead(run: Run): Promise<ReadPhase> {
  if (run.manifestIds.length === 0) {
    log('read: no manifests yet, issuing some first')
    await runLoops({ loops: cfg.connections, durationMs: 2000 }, async (_loop, rec) => {
      const result = await decidePath(run.arbTarget, rec, {
        orchestrators: ['orch-a', 'orch-b'],
        creatorKey: run.keys.orchA,
        keyFor: (id) => (id === 'orch-a' ? run.keys.orchA : run.keys.orchB),
        evidence: run.evidence1k,
        expectAll: true,
        subagentId: 'refund-agent-0',
      })
      run.manifestIds.push(result.manifestId)
    })
  }
  const maxId = await baselineRows(run)
  const ids = Array.from({ length: maxId }, (_, i) => i + 1)
  const nextRow = cycler(ids)
  const nextManifest = cycler(run.manifestIds)
  const common = { connections: cfg.connections, durationS: cfg.durationS }
  log(`read: baseline GET /select over ${maxId} rows, ${cfg.connections} connections`)
  await cannon({
    ...common,
    durationS: cfg.warmupS,
    origin: run.baseline.origin,
    nextPath: () => `/select?id=${nextRow()}`,
  })
  const baseline = await measuredCannon(run.mainDb.name, run.baseline.proc.pid, {
    ...common,
    origin: run.baseline.origin,
    nextPath: () => `/select?id=${nextRow()}`,
  })
  log(`read: Arbiter GET /v1/manifests/{id} over ${run.manifestIds.length} manifests`)
  run.arbiter.memory.phase = 'read'
  const auth = { authorization: `Bearer ${run.keys.orchA}` }
  await cannon({
    ...common,
    durationS: cfg.warmupS,
    origin: run.arbiter.origin,
    headers: auth,
    nextPath: () => `/v1/manifests/${nextManifest()}`,
  })
  const arbiter = await measuredCannon(run.mainDb.name, run.arbiter.proc.pid, {
    ...common,
    origin: run.arbiter.origin,
    headers: auth,
    nextPath: () => `/v1/manifests/${nextManifest()}`,
  })
  return {
    connections: cfg.connections,
    manifestsCycled: run.manifestIds.length,
    rowsCycled: maxId,
    baseline,
    arbiter,
    throughputRatio: arbiter.requestsPerSecond / baseline.requestsPerSecond,
    p99Ratio: arbiter.latency.p99 / baseline.latency.p99,
  }
}

// ---------------------------------------------------------------------------------------------------------
// Phase 3: scale curves (Arbiter only; each point is compared with the curve's first point of this run).

interface ScalePoint {
  orchestrators: number
  evidenceContentBytes: number
  iterations: number
  failedIterations: number
  failureExamples: string[]
  create: LatencySummary
  interpret: LatencySummary
  evaluate: LatencySummary
  path: LatencySummary
  /** Size of the evaluate response (the manifest envelope). */
  manifestBytes: number
}

interface ScalePhase {
  loops: number
  minIterations: number
  interpretations: ScalePoint[]
  evidence: ScalePoint[]
}

async function scalePoint(run: Run, orchestrators: number, evidence: EvidenceItem[], contentBytes: number) {
  const ids = Array.from({ length: orchestrators }, (_, i) => `orch-${String(i).padStart(3, '0')}`)
  let manifestBytes = 0
  let manifests = 0
  const minIterations = 20
  const result = await runLoops(
    {
      loops: cfg.scaleLoops,
      durationMs: cfg.scaleS * 1000,
      minIterations,
      maxDurationMs: cfg.scaleS * 4000,
    },
    async (loop, rec) => {
      const decided = await decidePath(run.arbTarget, rec, {
        orchestrators: ids,
        creatorKey: run.keys.admin,
        keyFor: () => run.keys.admin,
        evidence,
        expectAll: false,
        subagentId: `scale-agent-${loop}`,
      })
      manifestBytes += decided.manifestBytes
      manifests += 1
    },
  )
  const point: ScalePoint = {
    orchestrators,
    evidenceContentBytes: contentBytes,
    iterations: result.iterations,
    failedIterations: result.rec.failedIterations,
    failureExamples: result.rec.failureExamples,
    create: result.rec.summary('create'),
    interpret: result.rec.summary('interpret'),
    evaluate: result.rec.summary('evaluate'),
    path: result.rec.summary('path'),
    manifestBytes: manifests > 0 ? manifestBytes / manifests : 0,
  }
  return { point, minIterations }
}

async function phaseScale(run: Run): Promise<ScalePhase> {
  const phase: ScalePhase = { loops: cfg.scaleLoops, minIterations: 0, interpretations: [], evidence: [] }
  for (const orchestrators of SCALE_ORCHESTRATORS) {
    log(`scale: ${orchestrators} interpretations per outcome, ${cfg.scaleLoops} loops, ≥${cfg.scaleS}s`)
    run.arbiter.memory.phase = `scale ${orchestrators} interpretations`
    const { point, minIterations } = await scalePoint(run, orchestrators, run.evidence1k, 1024)
    phase.minIterations = minIterations
    phase.interpretations.push(point)
  }
  for (const bytes of SCALE_EVIDENCE_BYTES) {
    log(
      `scale: evidence content ${bytes / 1024} KB, 2 interpretations, ${cfg.scaleLoops} loops, ≥${cfg.scaleS}s`,
    )
    run.arbiter.memory.phase = `scale evidence ${bytes / 1024} KB`
    const evidence = bytes === 1024 ? run.evidence1k : makeEvidence(bytes)
    phase.evidence.push((await scalePoint(run, 2, evidence, bytes)).point)
  }
  return phase
}

// ---------------------------------------------------------------------------------------------------------
// Phase 3b: fan-outs (bench/reconcile.ts).

function runReconcilePhase(run: Run): Promise<ReconcilePhase> {
  run.arbiter.memory.phase = 'reconcile'
  return phaseReconcile({
    arbTarget: run.arbTarget,
    baseTarget: run.baseTarget,
    key: run.keys.scout,
    insert3Body: JSON.stringify(run.evidence1k),
    loops: cfg.connections,
    warmupS: cfg.warmupS,
    durationS: cfg.durationS,
    measure: (side, options, iteration) =>
      measuredLoops(
        run.mainDb.name,
        side === 'baseline' ? run.baseline.proc.pid : run.arbiter.proc.pid,
        options,
        iteration,
      ),
    log,
  })
}

function printReconcile(phase: ReconcilePhase): void {
  const a = phase.arbiter.byCall
  const row = (name: string, s: LatencySummary | undefined) => [
    name,
    String(s?.count ?? 0),
    ms(s?.p50 ?? Number.NaN),
    ms(s?.p95 ?? Number.NaN),
    ms(s?.p99 ?? Number.NaN),
    ms(s?.max ?? Number.NaN),
  ]
  printTable(
    `Reconcile detail (${phase.loops} loops each side; baseline ${phase.baseline.iterations} × POST /insert3, Arbiter ${phase.arbiter.iterations} fan-outs of ${phase.requestsPerFanout} requests)`,
    ['call', 'count', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms'],
    [
      row('baseline POST /insert3', phase.baseline.byCall.insert3),
      row('POST /v1/fanouts', a.create),
      row('POST …/results', a.result),
      row('POST …/reconcile', a.reconcile),
      row('whole path', a.path),
    ],
  )
  const first = phase.scale[0]
  printTable(
    'Reconcile scale: one fact, claims over 5 values (ratio = HTTP p50 / the 10-claim point; linear would be the claims ratio)',
    ['claims', 'positions', 'fan-outs', 'HTTP p50', 'HTTP max', 'in-process p50', 'manifest', 'ratio'],
    phase.scale.map((p) => [
      String(p.claims),
      String(p.positions),
      String(p.repeats),
      ms(p.http.p50),
      ms(p.http.max),
      ms(p.inProcess.p50),
      kb(p.manifestBytes),
      first ? times(p.http.p50 / first.http.p50) : '—',
    ]),
  )
  for (const example of [...phase.baseline.failureExamples, ...phase.arbiter.failureExamples])
    log(`reconcile failure: ${example}`)
}

// ---------------------------------------------------------------------------------------------------------
// Phase 4: audit at 10k, 100k, 1M records, on a database of its own and a second Arbiter process.

type EndpointState = 'ok' | 'missing' | `error: ${string}`

interface AuditLevel {
  records: number
  fill: { inserted: number; seconds: number }
  baselineSelect: (CannonResult & { cpu: CpuFigures }) | null
  byOrchestrator: (CannonResult & { cpu: CpuFigures }) | null
  byOrchestratorAndKind: CannonResult | null
  answerCheck: string
  p95Ratio: number | null
  verify: {
    ok: boolean
    checked: number
    seconds: number
    recordsPerSecond: number
    firstBadSeq: number | null
  } | null
  verifyNote: string | null
}

interface AuditPhase {
  status: string
  records: EndpointState
  verify: EndpointState
  connections: number
  /** This process hashing the same kind of records with hashAuditRecord (no database, no HTTP). */
  hashReferencePerS: number
  levels: AuditLevel[]
}

async function probeEndpoint(target: HttpTarget, key: string, path: string): Promise<EndpointState> {
  const res = await target.pool.request({ method: 'GET', path, headers: { authorization: `Bearer ${key}` } })
  const text = await res.body.text()
  if (res.statusCode === 200) return 'ok'
  if (res.statusCode === 404 && /no route/i.test(text)) return 'missing'
  return `error: ${res.statusCode} ${text.slice(0, 200)}`
}

function hashReferenceRate(): number {
  // The same records the fill writes, hashed in this process: what verification costs with no I/O at all.
  const sample = {
    seq: 1,
    at: new Date().toISOString(),
    kind: 'interpretation.recorded' as const,
    actor: '6f1f7a55-3c1e-4a53-9d43-0d5e0f0c1b2a',
    outcome_id: '0b8e3d1e-7a55-4c1e-9d43-6f1f0d5e0f0c',
    manifest_id: null,
    subagent_id: 'subagent-07',
    orchestrator_id: 'orch-0421',
    verdict: null,
    data: {
      interpretation_id: '9d436f1f-7a55-4c1e-0b8e-3d1e0d5e0f0c',
      revision: 1,
      success_criterion_signature: `sha256:${'a1'.repeat(32)}`,
      outcome_interpretation: 'failure',
      evidence_hash: `sha256:${'b2'.repeat(32)}`,
      intended_action: { kind: 'compensate', resources: ['refund:re_1'] },
    },
    prev_hash: `sha256:${'0'.repeat(64)}`,
  }
  const n = 30_000
  const started = performance.now()
  for (let i = 0; i < n; i++) sample.prev_hash = hashAuditRecord({ ...sample, seq: i + 1 })
  return n / ((performance.now() - started) / 1000)
}

async function phaseAudit(run: Run): Promise<AuditPhase> {
  const auditDb = await createDatabase(cfg.adminUrl, 'audit', cfg.dbSettings)
  onCleanup('drop audit database', () => auditDb.drop())
  log(`audit: second Arbiter on its own database ${auditDb.name}`)
  const arbiter = await startArbiter({
    repoRoot: cfg.arbiterRoot,
    databaseUrl: auditDb.url,
    poolMax: cfg.poolMax,
    name: 'arbiter-audit',
    cpuProfileDir: cfg.cpuProfileDir,
  })
  onCleanup('stop arbiter-audit', () => arbiter.stop())
  run.memories.push({ name: 'arbiter (audit phase)', sampler: arbiter.memory })
  const target = new HttpTarget(arbiter.origin, 2)
  try {
    const opsKey = await createKey(target, arbiter.adminKey, { role: 'ops', label: 'bench ops' })
    const records = await probeEndpoint(target, opsKey, '/v1/audit/records?limit=1')
    const verify = await probeEndpoint(target, opsKey, '/v1/audit/verify?from_seq=1&to_seq=1')
    const phase: AuditPhase = {
      status: 'ok',
      records,
      verify,
      connections: cfg.auditConnections,
      hashReferencePerS: hashReferenceRate(),
      levels: [],
    }
    if (records !== 'ok' && verify !== 'ok') {
      phase.status = records === 'missing' && verify === 'missing' ? 'skipped: endpoint missing' : 'skipped'
      log(`audit: ${phase.status} (records: ${records}; verify: ${verify})`)
      return phase
    }
    const maxLevel = Math.max(...cfg.auditLevels)
    const timeOriginMs = Date.now() - maxLevel * 5
    const auth = { authorization: `Bearer ${opsKey}` }
    let pick = 0
    const nextOrchestrator = () => syntheticOrchestratorId((pick++ * 7919) % SYNTHETIC_ORCHESTRATORS)
    for (const level of [...cfg.auditLevels].sort((a, b) => a - b)) {
      arbiter.memory.phase = `audit fill ${level}`
      log(`audit: filling the log to ${level} records`)
      const fill = await fillAuditLog(auditDb.url, level, { timeOriginMs })
      // Autovacuum analyzes a table after 10% new rows; do it now so the planner sees what production would.
      await withClient(auditDb.url, (client) => client.query('ANALYZE audit_records'))
      if (fill.firstSeq !== null) await checkChainSeams(auditDb.url, [fill.firstSeq, fill.total])
      log(`audit: ${fill.inserted} records written in ${(fill.ms / 1000).toFixed(1)}s, chain seams verified`)
      const entry: AuditLevel = {
        records: fill.total,
        fill: { inserted: fill.inserted, seconds: fill.ms / 1000 },
        baselineSelect: null,
        byOrchestrator: null,
        byOrchestratorAndKind: null,
        answerCheck: 'not run',
        p95Ratio: null,
        verify: null,
        verifyNote: null,
      }
      if (records === 'ok') {
        entry.answerCheck = await checkAuditAnswer(target, opsKey, syntheticOrchestratorId(421))
        const common = { connections: cfg.auditConnections, durationS: cfg.auditS }
        log(`audit: baseline GET /select, then filtered audit queries, ${cfg.auditConnections} connections`)
        const nextRow = cycler(Array.from({ length: await baselineRows(run) }, (_, i) => i + 1))
        entry.baselineSelect = await measuredCannon(run.mainDb.name, run.baseline.proc.pid, {
          ...common,
          origin: run.baseline.origin,
          nextPath: () => `/select?id=${nextRow()}`,
        })
        arbiter.memory.phase = `audit query ${level}`
        entry.byOrchestrator = await measuredCannon(auditDb.name, arbiter.proc.pid, {
          ...common,
          origin: arbiter.origin,
          headers: auth,
          nextPath: () => `/v1/audit/records?orchestrator_id=${nextOrchestrator()}&limit=50`,
        })
        entry.byOrchestratorAndKind = await cannon({
          ...common,
          origin: arbiter.origin,
          headers: auth,
          nextPath: () =>
            `/v1/audit/records?orchestrator_id=${nextOrchestrator()}&kind=interpretation.recorded&limit=50`,
        })
        entry.p95Ratio = entry.byOrchestrator.latency.p95 / entry.baselineSelect.latency.p95
      }
      if (verify === 'ok') {
        arbiter.memory.phase = `audit verify ${level}`
        log(`audit: GET /v1/audit/verify over ${fill.total} records`)
        const started = performance.now()
        try {
          const res = await target.call<{ ok: boolean; checked: number; first_bad_seq: number | null }>(
            null,
            'GET',
            '/v1/audit/verify',
            { key: opsKey, label: 'verify', expect: [200] },
          )
          const seconds = (performance.now() - started) / 1000
          entry.verify = {
            ok: res.body.ok,
            checked: res.body.checked,
            seconds,
            recordsPerSecond: res.body.checked / seconds,
            firstBadSeq: res.body.first_bad_seq,
          }
          if (!res.body.ok) entry.verifyNote = `chain reported bad at seq ${res.body.first_bad_seq}`
          else if (res.body.checked !== fill.total)
            entry.verifyNote = `checked ${res.body.checked} of ${fill.total} records`
        } catch (err) {
          entry.verifyNote = `failed: ${(err as Error).message.slice(0, 200)}`
        }
      }
      phase.levels.push(entry)
    }
    return phase
  } finally {
    await target.close()
    await arbiter.stop()
  }
}

/** One filtered query, checked: 200, {items, next_cursor}, at most 50 items, all for the orchestrator asked. */
async function checkAuditAnswer(target: HttpTarget, key: string, orchestratorId: string): Promise<string> {
  try {
    const res = await target.call<{
      items: { orchestrator_id: string | null; seq: number }[]
      next_cursor: unknown
    }>(null, 'GET', `/v1/audit/records?orchestrator_id=${orchestratorId}&limit=50`, {
      key,
      label: 'audit',
      expect: [200],
    })
    const { items } = res.body
    if (!Array.isArray(items)) return 'answer has no items array'
    if (items.length > 50) return `limit ignored: ${items.length} items`
    if (items.some((item) => item.orchestrator_id !== orchestratorId))
      return 'filter ignored: other orchestrators'
    if (items.some((item, i) => i > 0 && item.seq <= items[i - 1]!.seq)) return 'items not in ascending seq'
    return `ok (${items.length} items${res.body.next_cursor ? ', more pages' : ''})`
  } catch (err) {
    return `failed: ${(err as Error).message.slice(0, 200)}`
  }
}

// ---------------------------------------------------------------------------------------------------------
// Report.

interface Figure {
  figure: string
  arbiter: string
  baseline: string
  ratio: string
  target: string
  result: 'PASS' | 'MISS' | 'info' | 'skipped'
}

const ms = (value: number) => (Number.isNaN(value) ? '—' : value < 10 ? value.toFixed(2) : value.toFixed(1))
const rate = (value: number) => (value >= 10_000 ? `${(value / 1000).toFixed(1)}k` : value.toFixed(0))
const times = (value: number | null) => (value === null || Number.isNaN(value) ? '—' : `${value.toFixed(2)}×`)
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`
const kb = (bytes: number) =>
  bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : `${(bytes / 1024).toFixed(1)} KB`
const verdict = (pass: boolean): Figure['result'] => (pass ? 'PASS' : 'MISS')

function printTable(title: string, headers: string[], rows: string[][]): void {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)),
  )
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd()
  process.stdout.write(`\n${title}\n${line(headers)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n`)
  for (const row of rows) process.stdout.write(`${line(row)}\n`)
}

function buildFigures(results: {
  decide?: DecidePhase | undefined
  read?: ReadPhase | undefined
  reconcile?: ReconcilePhase | undefined
  audit?: AuditPhase | undefined
  memory: MemoryReport
}): Figure[] {
  const figures: Figure[] = []
  const { decide, read, reconcile, audit, memory } = results
  if (decide) {
    const failed = decide.arbiter.failedRequests + decide.baseline.failedRequests
    const failNote = failed > 0 ? ` (${failed} failed requests)` : ''
    figures.push({
      figure: `decide throughput, req/s${failNote}`,
      arbiter: rate(decide.arbiter.requestsPerSecond),
      baseline: rate(decide.baseline.requestsPerSecond),
      ratio: times(decide.throughputRatio),
      target: `≥ ${TARGETS.decideThroughputRatio.toFixed(2)}×`,
      result: verdict(failed === 0 && decide.throughputRatio >= TARGETS.decideThroughputRatio),
    })
    figures.push({
      figure: 'decide latency p50, ms (every request)',
      arbiter: ms(decide.arbiter.latency.p50),
      baseline: ms(decide.baseline.latency.p50),
      ratio: times(decide.p50Ratio),
      target: '',
      result: 'info',
    })
    figures.push({
      figure: 'decide latency p99, ms (every request)',
      arbiter: ms(decide.arbiter.latency.p99),
      baseline: ms(decide.baseline.latency.p99),
      ratio: times(decide.p99Ratio),
      target: `≤ ${TARGETS.decideP99Ratio.toFixed(2)}×`,
      result: verdict(decide.p99Ratio <= TARGETS.decideP99Ratio),
    })
    figures.push(...cpuRows('decide', decide.arbiter.cpu, decide.baseline.cpu))
  }
  if (read) {
    const failed = read.arbiter.non2xx + read.arbiter.errors + read.baseline.non2xx + read.baseline.errors
    figures.push({
      figure: `read throughput, req/s${failed > 0 ? ` (${failed} non-2xx/errors)` : ''}`,
      arbiter: rate(read.arbiter.requestsPerSecond),
      baseline: rate(read.baseline.requestsPerSecond),
      ratio: times(read.throughputRatio),
      target: `≥ ${TARGETS.readThroughputRatio.toFixed(2)}×`,
      result: verdict(failed === 0 && read.throughputRatio >= TARGETS.readThroughputRatio),
    })
    figures.push({
      figure: 'read latency p50 / p99, ms',
      arbiter: `${ms(read.arbiter.latency.p50)} / ${ms(read.arbiter.latency.p99)}`,
      baseline: `${ms(read.baseline.latency.p50)} / ${ms(read.baseline.latency.p99)}`,
      ratio: times(read.p99Ratio),
      target: '',
      result: 'info',
    })
    figures.push(...cpuRows('read', read.arbiter.cpu, read.baseline.cpu))
  }
  if (reconcile) {
    const failed = reconcile.arbiter.failedRequests + reconcile.baseline.failedRequests
    figures.push({
      figure: `reconcile throughput (create + 20 results + reconcile), req/s${failed > 0 ? ` (${failed} failed requests)` : ''}`,
      arbiter: rate(reconcile.arbiter.requestsPerSecond),
      baseline: rate(reconcile.baseline.requestsPerSecond),
      ratio: times(reconcile.throughputRatio),
      target: `≥ ${TARGETS.reconcileThroughputRatio.toFixed(2)}×`,
      result: verdict(failed === 0 && reconcile.throughputRatio >= TARGETS.reconcileThroughputRatio),
    })
    figures.push({
      figure: 'reconcile path latency p50 / p99, ms (every request)',
      arbiter: `${ms(reconcile.arbiter.latency.p50)} / ${ms(reconcile.arbiter.latency.p99)}`,
      baseline: `${ms(reconcile.baseline.latency.p50)} / ${ms(reconcile.baseline.latency.p99)}`,
      ratio: times(reconcile.p99Ratio),
      target: '',
      result: 'info',
    })
    figures.push(...cpuRows('reconcile', reconcile.arbiter.cpu, reconcile.baseline.cpu))
    const exponent = reconcile.scaleExponent
    figures.push({
      figure: 'one reconcile, 10 → 1,000 claims on a fact: growth exponent (1 linear, 2 quadratic)',
      arbiter: exponent === null ? '—' : exponent.toFixed(2),
      baseline: '',
      ratio: '',
      target: '< 1.5',
      result: exponent === null ? 'info' : verdict(exponent < 1.5),
    })
  }
  if (audit) {
    const maxLevel = Math.max(...cfg.auditLevels)
    if (audit.records !== 'ok') {
      figures.push({
        figure: 'audit query p95 (orchestrator_id filter)',
        arbiter: audit.records === 'missing' ? 'skipped: endpoint missing' : `skipped: ${audit.records}`,
        baseline: '',
        ratio: '',
        target: `< ${TARGETS.auditQueryP95Ms} ms at 1M`,
        result: 'skipped',
      })
    }
    if (audit.verify !== 'ok') {
      figures.push({
        figure: 'audit verify, records/s',
        arbiter: audit.verify === 'missing' ? 'skipped: endpoint missing' : `skipped: ${audit.verify}`,
        baseline: '',
        ratio: '',
        target: `≥ ${rate(TARGETS.verifyRecordsPerS)}/s`,
        result: 'skipped',
      })
    }
    for (const level of audit.levels) {
      const atMax = level.records >= maxLevel
      const label =
        level.records >= 1_000_000 ? `${level.records / 1_000_000}M` : `${Math.round(level.records / 1000)}k`
      if (level.byOrchestrator && level.baselineSelect) {
        const q = level.byOrchestrator
        const bad = q.non2xx + q.errors
        figures.push({
          figure: `audit query p50 / p95 @ ${label}, ms${bad > 0 ? ` (${bad} non-2xx)` : ''}`,
          arbiter: `${ms(q.latency.p50)} / ${ms(q.latency.p95)}`,
          baseline: `${ms(level.baselineSelect.latency.p50)} / ${ms(level.baselineSelect.latency.p95)}`,
          ratio: times(level.p95Ratio),
          target: atMax ? `p95 < ${TARGETS.auditQueryP95Ms} ms` : '',
          result: atMax ? verdict(bad === 0 && q.latency.p95 < TARGETS.auditQueryP95Ms) : 'info',
        })
        if (atMax) figures.push(...cpuRows(`audit query @ ${label}`, q.cpu, level.baselineSelect.cpu))
      }
      if (level.byOrchestratorAndKind && level.baselineSelect) {
        const q = level.byOrchestratorAndKind
        figures.push({
          figure: `audit query +kind p50 / p95 @ ${label}, ms`,
          arbiter: `${ms(q.latency.p50)} / ${ms(q.latency.p95)}`,
          baseline: `${ms(level.baselineSelect.latency.p50)} / ${ms(level.baselineSelect.latency.p95)}`,
          ratio: times(q.latency.p95 / level.baselineSelect.latency.p95),
          target: '',
          result: 'info',
        })
      }
      if (audit.verify === 'ok') {
        const v = level.verify
        figures.push({
          figure: `audit verify @ ${label}, records/s${level.verifyNote ? ` (${level.verifyNote})` : ''}`,
          arbiter: v ? rate(v.recordsPerSecond) : '—',
          baseline: `${rate(audit.hashReferencePerS)} hash-only`,
          ratio: v ? times(v.recordsPerSecond / audit.hashReferencePerS) : '—',
          target: atMax ? `≥ ${rate(TARGETS.verifyRecordsPerS)}/s` : '',
          result: atMax ? verdict(v?.ok === true && v.recordsPerSecond >= TARGETS.verifyRecordsPerS) : 'info',
        })
      }
    }
  }
  for (const instance of memory.instances) {
    figures.push({
      figure: `peak RSS, ${instance.name} (during ${instance.peakPhase})`,
      arbiter: mb(instance.peakBytes),
      baseline: memory.baselinePeakBytes ? mb(memory.baselinePeakBytes) : '—',
      ratio: memory.baselinePeakBytes ? times(instance.peakBytes / memory.baselinePeakBytes) : '—',
      target: `< ${mb(TARGETS.rssBytes)}`,
      result: verdict(instance.peakBytes < TARGETS.rssBytes),
    })
  }
  return figures
}

function cpuRows(phase: string, arbiter: CpuFigures, baseline: CpuFigures): Figure[] {
  const cell = (msPerRequest: number, cores: number) => `${ms(msPerRequest)} (${cores.toFixed(2)} cores)`
  return [
    {
      figure: `${phase} server CPU per request, ms`,
      arbiter: cell(arbiter.serverMsPerRequest, arbiter.serverCores),
      baseline: cell(baseline.serverMsPerRequest, baseline.serverCores),
      ratio: times(arbiter.serverMsPerRequest / baseline.serverMsPerRequest),
      target: '',
      result: 'info',
    },
    {
      figure: `${phase} PostgreSQL CPU per request, ms`,
      arbiter: cell(arbiter.postgresMsPerRequest, arbiter.postgresCores),
      baseline: cell(baseline.postgresMsPerRequest, baseline.postgresCores),
      ratio: times(arbiter.postgresMsPerRequest / baseline.postgresMsPerRequest),
      target: '',
      result: 'info',
    },
  ]
}

interface MemoryReport {
  instances: {
    name: string
    peakBytes: number
    peakPolledRssBytes: number
    hwmBytes: number
    peakPhase: string
    samples: number
    /** Highest polled RSS in each phase, bytes. */
    byPhase: Record<string, number>
    /** Highest V8 heap total / used and external memory in each phase, bytes (from /metrics, once a second). */
    heapByPhase: Record<string, { heapTotal: number; heapUsed: number; external: number }>
  }[]
  baselinePeakBytes: number
}

function memoryReport(run: Run): MemoryReport {
  return {
    instances: run.memories.map(({ name, sampler }) => ({
      name,
      peakBytes: sampler.peakBytes,
      peakPolledRssBytes: sampler.peakRssBytes,
      hwmBytes: sampler.hwmBytes,
      peakPhase: sampler.peakPhase,
      samples: sampler.samples,
      byPhase: Object.fromEntries(sampler.phasePeaks),
      heapByPhase: Object.fromEntries(sampler.heapPeaks),
    })),
    baselinePeakBytes: run.baselineMemory.peakBytes,
  }
}

function printScale(scale: ScalePhase): void {
  const first = scale.interpretations[0]
  printTable(
    `Scale: interpretations per outcome (1 KB evidence, admin key, ${scale.loops} loops; path = create + N interpretations + evaluate; ratio = path p50 / the 2-orchestrator point)`,
    [
      'orchestrators',
      'outcomes',
      'evaluate p50',
      'evaluate p99',
      'path p50',
      'path p99',
      'manifest',
      'ratio',
      'failed',
    ],
    scale.interpretations.map((p) => [
      String(p.orchestrators),
      String(p.iterations),
      ms(p.evaluate.p50),
      ms(p.evaluate.p99),
      ms(p.path.p50),
      ms(p.path.p99),
      kb(p.manifestBytes),
      first ? times(p.path.p50 / first.path.p50) : '—',
      String(p.failedIterations),
    ]),
  )
  const base = scale.evidence[0]
  printTable(
    `Scale: evidence content size (2 interpretations, ${scale.loops} loops; ratio = path p50 / the 1 KB point)`,
    [
      'evidence',
      'outcomes',
      'create p50',
      'create p99',
      'evaluate p50',
      'evaluate p99',
      'path p50',
      'path p99',
      'ratio',
      'failed',
    ],
    scale.evidence.map((p) => [
      kb(p.evidenceContentBytes),
      String(p.iterations),
      ms(p.create.p50),
      ms(p.create.p99),
      ms(p.evaluate.p50),
      ms(p.evaluate.p99),
      ms(p.path.p50),
      ms(p.path.p99),
      base ? times(p.path.p50 / base.path.p50) : '—',
      String(p.failedIterations),
    ]),
  )
  for (const p of [...scale.interpretations, ...scale.evidence]) {
    if (p.failureExamples.length > 0)
      log(`scale failures (${p.orchestrators} orch, ${kb(p.evidenceContentBytes)}): ${p.failureExamples[0]}`)
  }
}

function printMemory(memory: MemoryReport): void {
  const rows: string[][] = []
  for (const instance of memory.instances) {
    for (const [phase, rss] of Object.entries(instance.byPhase)) {
      const heap = instance.heapByPhase[phase]
      rows.push([
        `${instance.name}: ${phase}`,
        mb(rss),
        heap ? mb(heap.heapTotal) : '—',
        heap ? mb(heap.heapUsed) : '—',
        heap ? mb(heap.external) : '—',
      ])
    }
  }
  printTable(
    `Memory by phase (RSS polled every 200 ms; V8 heap from /metrics once a second; baseline server peak ${mb(memory.baselinePeakBytes)})`,
    ['process: phase', 'peak RSS', 'heap total', 'heap used', 'external'],
    rows,
  )
}

function printDecideDetail(decide: DecidePhase): void {
  const a = decide.arbiter.byCall
  const row = (name: string, s: LatencySummary | undefined) => [
    name,
    String(s?.count ?? 0),
    ms(s?.p50 ?? Number.NaN),
    ms(s?.p95 ?? Number.NaN),
    ms(s?.p99 ?? Number.NaN),
    ms(s?.max ?? Number.NaN),
  ]
  printTable(
    `Decide detail (${decide.loops} loops each side; baseline ${decide.baseline.iterations} × POST /insert3, Arbiter ${decide.arbiter.iterations} outcomes decided)`,
    ['call', 'count', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms'],
    [
      row('baseline POST /insert3', decide.baseline.byCall.insert3),
      row('POST /v1/outcomes', a.create),
      row('POST …/interpretations', a.interpret),
      row('POST …/evaluate', a.evaluate),
      row('whole 4-call path', a.path),
    ],
  )
  for (const example of [...decide.baseline.failureExamples, ...decide.arbiter.failureExamples])
    log(`decide failure: ${example}`)
}

function gitCommit(): { commit: string | null; srcModified: boolean | null } {
  // Read-only git: GIT_OPTIONAL_LOCKS=0 keeps even `git diff` from refreshing the index.
  const env = { ...process.env, GIT_OPTIONAL_LOCKS: '0' }
  let commit: string | null = null
  let srcModified: boolean | null = null
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repoRoot, env, encoding: 'utf8' }).trim()
  } catch {
    // not a git checkout
  }
  try {
    execFileSync('git', ['diff', '--quiet', 'HEAD', '--', 'src', 'migrations'], {
      cwd: repoRoot,
      env,
      stdio: 'ignore',
    })
    srcModified = false
  } catch (err) {
    srcModified = (err as { status?: number }).status === 1 ? true : null
  }
  return { commit, srcModified }
}

// ---------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = performance.now()
  const startedAt = new Date()
  const git = gitCommit()
  log(
    `Arbiter bench — commit ${git.commit?.slice(0, 12) ?? 'unknown'}${git.srcModified ? ' (+ uncommitted src changes)' : ''}, node ${process.version}, ${os.cpus().length} CPUs`,
  )
  log(
    `duration ${cfg.durationS}s per measured phase (warm-up ${cfg.warmupS}s), ${cfg.connections} connections, pool ${cfg.poolMax}, phases: ${[...cfg.phases].join(',')}`,
  )
  if (Object.keys(cfg.dbSettings).length > 0) {
    log(`NON-DEFAULT database settings (investigation run): ${JSON.stringify(cfg.dbSettings)}`)
  }
  if (cfg.arbiterRoot !== repoRoot)
    log(`Arbiter from ANOTHER checkout (investigation run): ${cfg.arbiterRoot}`)
  if (cfg.cpuProfileDir) await mkdir(cfg.cpuProfileDir, { recursive: true })

  const mainDb = await createDatabase(cfg.adminUrl, 'main', cfg.dbSettings)
  onCleanup('drop main database', () => mainDb.drop())
  log(`database ${mainDb.name} created`)
  const baseline = await startBaseline({ repoRoot, databaseUrl: mainDb.url, poolMax: cfg.poolMax })
  onCleanup('stop baseline', () => baseline.stop())
  const baselineMemory = new MemorySampler(baseline.proc.pid)
  baselineMemory.start(200)
  const arbiter = await startArbiter({
    repoRoot: cfg.arbiterRoot,
    databaseUrl: mainDb.url,
    poolMax: cfg.poolMax,
    name: 'arbiter',
    cpuProfileDir: cfg.cpuProfileDir,
  })
  onCleanup('stop arbiter', () => arbiter.stop())
  log(`baseline (pid ${baseline.proc.pid}) and Arbiter (pid ${arbiter.proc.pid}) ready`)

  const baseTarget = new HttpTarget(baseline.origin, cfg.connections)
  const arbTarget = new HttpTarget(arbiter.origin, Math.max(cfg.connections, cfg.scaleLoops))
  onCleanup('close clients', async () => {
    await baseTarget.close()
    await arbTarget.close()
  })
  const keys = {
    orchA: await createKey(arbTarget, arbiter.adminKey, {
      role: 'orchestrator',
      orchestrator_ids: ['orch-a'],
      label: 'bench orch-a',
    }),
    orchB: await createKey(arbTarget, arbiter.adminKey, {
      role: 'orchestrator',
      orchestrator_ids: ['orch-b'],
      label: 'bench orch-b',
    }),
    scout: await createKey(arbTarget, arbiter.adminKey, {
      role: 'orchestrator',
      orchestrator_ids: ['bench-scout'],
      label: 'bench fan-out owner',
    }),
    admin: arbiter.adminKey,
  }
  const run: Run = {
    mainDb,
    baseline,
    baselineMemory,
    baseTarget,
    arbiter,
    arbTarget,
    keys,
    evidence1k: makeEvidence(1024),
    manifestIds: [],
    memories: [{ name: 'arbiter', sampler: arbiter.memory }],
  }

  const decide = cfg.phases.has('decide') ? await phaseDecide(run) : undefined
  const read = cfg.phases.has('read') ? await phaseRead(run) : undefined
  const scale = cfg.phases.has('scale') ? await phaseScale(run) : undefined
  const fanouts = cfg.phases.has('reconcile') ? await runReconcilePhase(run) : undefined
  await arbiter.stop()
  const audit = cfg.phases.has('audit') ? await phaseAudit(run) : undefined
  baselineMemory.stop()
  const memory = memoryReport(run)

  if (decide) printDecideDetail(decide)
  if (scale) printScale(scale)
  if (fanouts) printReconcile(fanouts)
  printMemory(memory)
  const figures = buildFigures({ decide, read, reconcile: fanouts, audit, memory })
  printTable(
    'Arbiter vs the bare stack (same run, side by side; ratio = Arbiter / baseline)',
    ['figure', 'arbiter', 'baseline', 'ratio', 'target', 'result'],
    figures.map((f) => [f.figure, f.arbiter, f.baseline, f.ratio, f.target, f.result]),
  )
  if (audit && audit.status !== 'ok')
    process.stdout.write(
      `\naudit phase: ${audit.status} (records: ${audit.records}; verify: ${audit.verify})\n`,
    )
  for (const level of audit?.levels ?? []) {
    if (level.answerCheck && !level.answerCheck.startsWith('ok') && level.answerCheck !== 'not run')
      process.stdout.write(`audit answer check @ ${level.records}: ${level.answerCheck}\n`)
  }

  const totalS = (performance.now() - started) / 1000
  const results = {
    schema: 1,
    date: startedAt.toISOString(),
    commit: git.commit,
    src_modified: git.srcModified,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model ?? null,
    postgres: await withClient(
      cfg.adminUrl,
      async (c) => (await c.query<{ v: string }>('SHOW server_version AS v')).rows[0]?.v ?? null,
    ).catch(() => null),
    config: {
      duration_s: cfg.durationS,
      warmup_s: cfg.warmupS,
      scale_s: cfg.scaleS,
      audit_s: cfg.auditS,
      connections: cfg.connections,
      scale_loops: cfg.scaleLoops,
      audit_connections: cfg.auditConnections,
      pool_max: cfg.poolMax,
      audit_levels: cfg.auditLevels,
      phases: [...cfg.phases],
      db_settings: cfg.dbSettings,
      arbiter_root: cfg.arbiterRoot === repoRoot ? null : cfg.arbiterRoot,
      cpu_profiles: cfg.cpuProfileDir ?? null,
    },
    total_s: totalS,
    targets: TARGETS,
    ratios: {
      decide_throughput: decide?.throughputRatio ?? null,
      decide_p50: decide?.p50Ratio ?? null,
      decide_p99: decide?.p99Ratio ?? null,
      read_throughput: read?.throughputRatio ?? null,
      read_p99: read?.p99Ratio ?? null,
      reconcile_throughput: fanouts?.throughputRatio ?? null,
      reconcile_scale_exponent: fanouts?.scaleExponent ?? null,
    },
    figures,
    decide: decide ?? null,
    read: read ?? null,
    scale: scale ?? null,
    reconcile: fanouts ?? null,
    audit: audit ?? null,
    memory,
  }
  const out = join(repoRoot, 'bench', 'results', 'latest.json')
  await mkdir(dirname(out), { recursive: true })
  await writeFile(out, `${JSON.stringify(results, null, 2)}\n`)
  process.stdout.write(
    `\n${figures.filter((f) => f.result === 'MISS').length} target(s) missed; total ${totalS.toFixed(0)}s; results in bench/results/latest.json\n`,
  )
  return 0
}

let exitCode = 1
try {
  exitCode = await main()
} catch (err) {
  process.stderr.write(`\nbench failed: ${(err as Error).stack ?? err}\n`)
} finally {
  await cleanupAll()
}
process.exit(exitCode)
