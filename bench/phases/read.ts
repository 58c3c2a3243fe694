import { createReadStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cfg, repoRoot } from '../config.ts'
import { type DecideRound, equalLoadRate, interleavedRounds, medianRound } from '../decide-rounds.ts'
import {
  type AnswerCheck,
  AnswerSample,
  type AnswerSummary,
  type CannonResult,
  HttpTarget,
  runLoops,
} from '../load.ts'
import {
  baselineRows,
  type CpuFigures,
  cycler,
  type LoopFigures,
  log,
  measuredCannon,
  measuredLoops,
  onCleanup,
  type Run,
} from '../run-context.ts'
import { startArbiter, startBaseline } from '../servers.ts'
import { decidePath } from '../workloads.ts'

/**
 * Phase 4, read: GET /v1/manifests/{id} over the manifests issued so far vs GET /select?id= (a primary-key
 * lookup), in two conditions, each on its own pair of servers:
 *
 * - logging off: Arbiter at LOG_LEVEL=warn, the baseline without a logger;
 * - logging on: Arbiter at `info` (its default: one line per request) and the baseline with fastify's own pino
 *   logger at `info` (its default request logging: two lines per request).
 *
 * Each pair is started for its condition on the run's database, both writing stdout to a file of their own in a
 * temporary directory (removed afterwards), so that both conditions measure servers as fresh.
 *
 * In each condition, after a warm-up of each side, interleaved rounds (`cfg.decideRounds`) of autocannon windows,
 * each side at its own maximum rate, then as many rounds at equal load: both sides paced at the same request rate
 * (70% of Arbiter's median rate above; `runLoops`, as the decide phase), where server CPU per request is compared.
 * The load generator checks one answer in CHECK_EVERY: status 200 and the manifest (the row) asked for.
 */
export interface ReadPhase {
  connections: number
  manifestsCycled: number
  rowsCycled: number
  conditions: ReadCondition[]
}

export type ReadWindow = CannonResult & { cpu: CpuFigures }
export type PacedReadWindow = LoopFigures & { answers: AnswerSummary }

export interface ReadCondition {
  logging: 'off' | 'on'
  /** How each side logs in this condition, and where its lines go. */
  setup: { arbiter: string; baseline: string; destination: string }
  rounds: DecideRound<ReadWindow>[]
  /** Medians over the rounds. */
  throughputRatio: number
  p50Ratio: number
  p99Ratio: number
  serverCpuRatio: number
  paced: { requestsPerSecond: number; rounds: DecideRound<PacedReadWindow>[]; serverCpuRatio: number }
  /** Every window's sample of checked answers, added up, by side. */
  answers: { arbiter: AnswerSummary; baseline: AnswerSummary }
  /** What each side wrote to its log over the condition, warm-up included (logging on only). */
  logs?: { arbiter: LogVolume; baseline: LogVolume }
}

export interface LogVolume {
  lines: number
  bytes: number
  /** Requests the side answered over the condition, warm-up included. */
  requests: number
}

const LOGGING_OFF: ReadCondition['setup'] = {
  arbiter: 'LOG_LEVEL=warn',
  baseline: 'no logger',
  destination: 'none written',
}

const LOGGING_ON: ReadCondition['setup'] = {
  arbiter: 'LOG_LEVEL=info (its default; one line per request)',
  baseline: "fastify's pino logger at info (its default request logging; two lines per request)",
  destination: 'stdout to a file each, local disk',
}

/** One answer in this many is checked by the load generator. */
const CHECK_EVERY = 100

/** One side of a condition: where it listens and what it is asked. */
interface ReadSide {
  pid: number
  target: HttpTarget
  key?: string
  nextPath: () => string
  check: AnswerCheck
  /** Requests answered so far (every window, warm-up included). */
  answered: number
  answers: AnswerSummary
}

export async function phaseRead(run: Run): Promise<ReadPhase> {
  if (run.manifestIds.length === 0) await issueManifests(run)
  const maxId = await baselineRows(run)
  const nextRow = cycler(Array.from({ length: maxId }, (_, i) => i + 1))
  const nextManifest = cycler(run.manifestIds)
  const sides = (
    pids: { baseline: number; arbiter: number },
    targets: { baseline: HttpTarget; arbiter: HttpTarget },
  ) => ({
    baseline: side(pids.baseline, targets.baseline, undefined, () => `/select?id=${nextRow()}`, rowCheck),
    arbiter: side(
      pids.arbiter,
      targets.arbiter,
      run.keys.orchA,
      () => `/v1/manifests/${nextManifest()}`,
      manifestCheck,
    ),
  })
  log(
    `read: baseline GET /select over ${maxId} rows vs Arbiter GET /v1/manifests/{id} over ${run.manifestIds.length} manifests, ${cfg.connections} connections, logging ${cfg.readLogging.join(' then ')}`,
  )
  run.arbiter.memory.phase = 'read'
  const conditions: ReadCondition[] = []
  for (const logging of ['off', 'on'] as const) {
    if (!cfg.readLogging.includes(logging)) continue
    const servers = await startReadServers(run, logging)
    const pair = sides(servers.pids, servers.targets)
    let condition: ReadCondition
    try {
      condition = await measureCondition(run, logging, logging === 'on' ? LOGGING_ON : LOGGING_OFF, pair)
    } finally {
      await servers.stop()
    }
    if (logging === 'on') {
      condition.logs = {
        arbiter: { ...(await logVolume(servers.files.arbiter)), requests: pair.arbiter.answered },
        baseline: { ...(await logVolume(servers.files.baseline)), requests: pair.baseline.answered },
      }
    }
    await servers.removeFiles()
    conditions.push(condition)
  }
  return {
    connections: cfg.connections,
    manifestsCycled: run.manifestIds.length,
    rowsCycled: maxId,
    conditions,
  }
}

function side(
  pid: number,
  target: HttpTarget,
  key: string | undefined,
  nextPath: () => string,
  check: AnswerCheck,
): ReadSide {
  return {
    pid,
    target,
    ...(key ? { key } : {}),
    nextPath,
    check,
    answered: 0,
    answers: { every: check.every, checked: 0, wrong: 0, examples: [] },
  }
}

/** Warm-up, saturated rounds, equal-load rounds: one condition's figures. */
async function measureCondition(
  run: Run,
  logging: ReadCondition['logging'],
  setup: ReadCondition['setup'],
  sides: { baseline: ReadSide; arbiter: ReadSide },
): Promise<ReadCondition> {
  const database = run.mainDb.name
  const saturated = (s: ReadSide, durationS: number) => async () => {
    const options = {
      origin: s.target.origin,
      connections: cfg.connections,
      durationS,
      headers: s.key ? { authorization: `Bearer ${s.key}` } : ({} as Record<string, string>),
      nextPath: s.nextPath,
      check: s.check,
    }
    const window = await measuredCannon(database, s.pid, options)
    s.answered += window.latency.count
    addAnswers(s.answers, window.answers)
    return window
  }
  // The logging-on pair has just started: as long a warm-up as the decide phase gives fresh servers.
  await saturated(sides.baseline, cfg.decideWarmupS)()
  await saturated(sides.arbiter, cfg.decideWarmupS)()
  const rounds = await interleavedRounds(
    cfg.decideRounds,
    { baseline: saturated(sides.baseline, cfg.durationS), arbiter: saturated(sides.arbiter, cfg.durationS) },
    (r) =>
      log(
        `read, logging ${logging}, round ${r.round}: ${r.arbiter.requestsPerSecond.toFixed(0)} / ${r.baseline.requestsPerSecond.toFixed(0)} req/s, ${r.throughputRatio.toFixed(2)}×, server CPU per request ${r.serverCpuRatio.toFixed(2)}×`,
      ),
  )
  const rate = equalLoadRate(rounds)
  const paced = (s: ReadSide) => async (): Promise<PacedReadWindow> => {
    const sample = new AnswerSample(s.check)
    const window = { loops: cfg.connections, durationMs: cfg.durationS * 1000, iterationsPerSecond: rate }
    const figures = await measuredLoops(database, s.pid, window, async (_loop, rec) => {
      const path = s.nextPath()
      const answer = await s.target.call(rec, 'GET', path, {
        ...(s.key ? { key: s.key } : {}),
        expect: [200],
        label: 'read',
      })
      sample.answer(path, answer.status, () => answer.body)
    })
    s.answered += figures.latency.count
    addAnswers(s.answers, sample.summary())
    return { ...figures, answers: sample.summary() }
  }
  const pacedRounds = await interleavedRounds(
    cfg.decideRounds,
    { baseline: paced(sides.baseline), arbiter: paced(sides.arbiter) },
    (r) =>
      log(
        `read, logging ${logging}, at equal load (${rate} req/s), round ${r.round}: reached ${r.arbiter.requestsPerSecond.toFixed(0)} / ${r.baseline.requestsPerSecond.toFixed(0)} req/s, server CPU per request ${r.serverCpuRatio.toFixed(2)}×`,
      ),
  )
  return {
    logging,
    setup,
    rounds,
    throughputRatio: medianRound(rounds, (r) => r.throughputRatio).throughputRatio,
    p50Ratio: medianRound(rounds, (r) => r.p50Ratio).p50Ratio,
    p99Ratio: medianRound(rounds, (r) => r.p99Ratio).p99Ratio,
    serverCpuRatio: medianRound(rounds, (r) => r.serverCpuRatio).serverCpuRatio,
    paced: {
      requestsPerSecond: rate,
      rounds: pacedRounds,
      serverCpuRatio: medianRound(pacedRounds, (r) => r.serverCpuRatio).serverCpuRatio,
    },
    answers: { arbiter: sides.arbiter.answers, baseline: sides.baseline.answers },
  }
}

function addAnswers(total: AnswerSummary, window: AnswerSummary | undefined): void {
  if (!window) return
  total.checked += window.checked
  total.wrong += window.wrong
  for (const example of window.examples) if (total.examples.length < 5) total.examples.push(example)
}

/**
 * A condition's own pair on the run's database, started for it so that both conditions measure servers as fresh
 * and as warmed up: with logging on, Arbiter at `info` and the baseline with its logger; each writes stdout to its
 * own file in a new temporary directory.
 */
async function startReadServers(run: Run, logging: ReadCondition['logging']) {
  const dir = await mkdtemp(join(tmpdir(), 'arbiter-bench-logs-'))
  const removeFiles = () => rm(dir, { recursive: true, force: true })
  onCleanup('remove the read phase log files', removeFiles)
  const files = { baseline: join(dir, 'baseline.log'), arbiter: join(dir, 'arbiter.log') }
  const common = { databaseUrl: run.mainDb.url, poolMax: cfg.poolMax }
  const baseline = await startBaseline({
    ...common,
    ...(logging === 'on' ? { logLevel: 'info' } : {}),
    repoRoot,
    name: `baseline-logging-${logging}`,
    stdoutFile: files.baseline,
  })
  onCleanup(`stop baseline (logging ${logging})`, () => baseline.stop())
  const arbiter = await startArbiter({
    ...common,
    logLevel: logging === 'on' ? 'info' : 'warn',
    repoRoot: cfg.arbiterRoot,
    name: `arbiter-logging-${logging}`,
    stdoutFile: files.arbiter,
    cpuProfileDir: cfg.cpuProfileDir,
  })
  onCleanup(`stop arbiter (logging ${logging})`, () => arbiter.stop())
  arbiter.memory.phase = `read (logging ${logging})`
  const targets = {
    baseline: new HttpTarget(baseline.origin, cfg.connections),
    arbiter: new HttpTarget(arbiter.origin, cfg.connections),
  }
  log(
    `read, logging ${logging}: baseline (pid ${baseline.proc.pid}) and Arbiter (pid ${arbiter.proc.pid}), stdout to ${dir}`,
  )
  return {
    pids: { baseline: baseline.proc.pid, arbiter: arbiter.proc.pid },
    targets,
    files,
    removeFiles,
    /** Both stopped (their last lines written) and their clients closed. */
    stop: async () => {
      await Promise.all([targets.baseline.close(), targets.arbiter.close()])
      await Promise.all([baseline.stop(), arbiter.stop()])
    },
  }
}

async function logVolume(path: string): Promise<{ lines: number; bytes: number }> {
  let lines = 0
  let bytes = 0
  for await (const chunk of createReadStream(path)) {
    const buffer = chunk as Buffer
    bytes += buffer.length
    for (let at = buffer.indexOf(10); at !== -1; at = buffer.indexOf(10, at + 1)) lines += 1
  }
  return { lines, bytes }
}

/** The read phase alone has no manifests to read: the decide path issues some first. */
async function issueManifests(run: Run): Promise<void> {
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

/** GET /v1/manifests/{id}: 200 and the envelope of the manifest asked for, with its JWS. */
const manifestCheck: AnswerCheck = {
  every: CHECK_EVERY,
  verify(path, status, body) {
    if (status !== 200) return `status ${status}`
    const envelope = body() as { manifest?: { manifest_id?: unknown }; jws?: unknown } | null
    const id = path.slice(path.lastIndexOf('/') + 1)
    if (envelope?.manifest?.manifest_id !== id)
      return `manifest_id ${String(envelope?.manifest?.manifest_id)}, asked for ${id}`
    if (typeof envelope.jws !== 'string') return 'no JWS'
    return null
  },
}

/** GET /select?id=N: 200 and row N. */
const rowCheck: AnswerCheck = {
  every: CHECK_EVERY,
  verify(path, status, body) {
    if (status !== 200) return `status ${status}`
    const row = body() as { id?: unknown } | null
    const id = path.slice(path.indexOf('=') + 1)
    return String(row?.id) === id ? null : `id ${String(row?.id)}, asked for ${id}`
  },
}
