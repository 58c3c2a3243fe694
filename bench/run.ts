import { execFileSync } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import os from 'node:os'
import { buildForBench } from './build.ts'
import { cfg, repoRoot } from './config.ts'
import { createDatabase, withClient } from './database.ts'
import { HttpTarget, runLoops } from './load.ts'
import { startOtlpSink } from './otlp-sink.ts'
import { phaseAudit } from './phases/audit.ts'
import { phaseDecide } from './phases/decide.ts'
import { phaseEmbedded } from './phases/embedded.ts'
import { measureLargeBodies, printLargeBodies } from './phases/large-bodies.ts'
import { phaseRead } from './phases/read.ts'
import { phaseReconcile } from './phases/reconcile.ts'
import { phaseReview } from './phases/review.ts'
import { phaseScale } from './phases/scale.ts'
import { phaseWebhooks } from './phases/webhooks.ts'
import { phaseWorstCase, printWorstCase } from './phases/worst-case.ts'
import { MemorySampler } from './processes.ts'
import {
  buildFigures,
  memoryReport,
  printDecideDetail,
  printMemory,
  printScale,
  printTable,
  writeResults,
} from './report.ts'
import { cleanUpOnSignals, cleanupAll, log, measuredLoops, onCleanup, type Run } from './run-context.ts'
import { startArbiter, startBaseline } from './servers.ts'
import { createKey, makeEvidence } from './workloads.ts'

/**
 * `npm run bench`: what Arbiter costs on top of the stack it runs on (fastify 5 + pg + PostgreSQL).
 *
 * Every throughput and latency figure is a ratio to a bare fastify + pg server (bench/baseline-server.ts)
 * measured in the same run, right before, with the same generator, concurrency and duration: the machine is
 * shared and noisy, so absolute numbers from different runs are not comparable. Phases:
 *
 * 1. decide    — the full orchestrator path (create, 2 interpretations, evaluate) vs POST /insert3, with the
 *                sequencing lag of the log under that load
 * 2. review    — a two-stage review (create, 2 verdicts, decide) vs POST /insert3
 * 3. reconcile — fan-outs (create, 20 results, reconcile) vs POST /insert3, and reconcile's growth with claims
 * 4. read      — GET /v1/manifests/{id} vs GET /select, request logging off and on at both sides
 * 5. scale     — decide latency as interpretations per outcome and evidence size grow
 * 6. large-bodies — ten 1 MiB evidence bodies at once: the worst /healthz delay (bench/large-bodies.ts alone)
 * 6b. worst-case — the largest inputs the limits allow, 32 cases at once, then 12 list readers at limit=500 and
 *                300 streams with one key: peak RSS, /healthz p99, answers ≥ 500 but 503, the largest manifest
 * 6c. webhooks — decide with three webhooks subscribed to every event vs none (its own Arbiter), the delivery lag
 *                under that load, and the catch-up rate after a receiver outage of 10,000 events
 * 7. audit     — filtered audit queries, verification, inclusion/consistency proofs at 10k, 100k and 1M records
 *                (synthetic history), and the checkpoint signing rate
 * 8. embedded  — the decide flow on the embedded database vs PostgreSQL mode (built server, both modes)
 * 9. memory    — peak RSS of each Arbiter process
 *
 * Env: BENCH_DURATION_S (10), BENCH_CONNECTIONS (16), BENCH_DECIDE_ROUNDS (3), BENCH_SCALE_LOOPS (4),
 * BENCH_AUDIT_CONNECTIONS (4), BENCH_POOL_MAX (10), BENCH_AUDIT_LEVELS (10000,100000,1000000),
 * BENCH_PHASES (decide,review,reconcile,read,scale,large-bodies,worst-case,webhooks,audit,embedded; e.g. BENCH_PHASES=worst-case
 * runs that phase alone),
 * BENCH_PG_ADMIN_URL (postgres://postgres@127.0.0.1:5432/test), BENCH_CPU_PROF=1 (V8 profiles of Arbiter in
 * bench/results/profiles), and for investigation only BENCH_DB_SETTINGS (`name=value,…` set on the bench
 * databases), BENCH_ARBITER_ROOT (start the Arbiter of another checkout, e.g. a worktree with a candidate fix) and
 * BENCH_FRESH_PLANS=1 (no ANALYZE before the measured windows).
 */

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

async function main(): Promise<number> {
  cleanUpOnSignals()
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
  if (cfg.freshPlans) {
    log('BENCH_FRESH_PLANS=1 (investigation run): no ANALYZE before the measured windows')
  }
  if (cfg.arbiterRoot !== repoRoot)
    log(`Arbiter from ANOTHER checkout (investigation run): ${cfg.arbiterRoot}`)
  if (cfg.cpuProfileDir) await mkdir(cfg.cpuProfileDir, { recursive: true })

  log('building dist/ and the baseline (what production runs; BENCH_SKIP_BUILD=1 skips it)')
  buildForBench([cfg.arbiterRoot])
  const mainDb = await createDatabase(cfg.adminUrl, 'main', cfg.dbSettings)
  onCleanup('drop main database', () => mainDb.drop())
  log(`database ${mainDb.name} created`)
  const baseline = await startBaseline({ repoRoot, databaseUrl: mainDb.url, poolMax: cfg.poolMax })
  onCleanup('stop baseline', () => baseline.stop())
  const baselineMemory = new MemorySampler(baseline.proc.pid)
  baselineMemory.start(200)
  const sink = cfg.tracing ? await startOtlpSink() : undefined
  if (sink) {
    onCleanup('stop OTLP receiver', () => sink.stop())
    log(
      `BENCH_TRACING=1: Arbiter traces every request (always_on) to a local OTLP/HTTP receiver, ${sink.endpoint}`,
    )
  }
  const arbiter = await startArbiter({
    repoRoot: cfg.arbiterRoot,
    databaseUrl: mainDb.url,
    poolMax: cfg.poolMax,
    name: 'arbiter',
    cpuProfileDir: cfg.cpuProfileDir,
    otlpEndpoint: sink?.endpoint,
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
      label: 'bench fan-outs',
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

  const loops = cfg.connections
  const insert3Body = JSON.stringify(run.evidence1k)
  const measure = (
    server: 'baseline' | 'arbiter',
    options: Parameters<typeof runLoops>[0],
    iteration: Parameters<typeof runLoops>[1],
  ) =>
    measuredLoops(run.mainDb.name, (server === 'baseline' ? baseline : arbiter).proc.pid, options, iteration)
  const window = { loops, durationMs: cfg.durationS * 1000 }

  const decide = cfg.phases.has('decide') ? await phaseDecide(run) : undefined
  // Each phase's memory apart (the decide, read, scale, worst-case and audit phases name their own parts).
  const enterMemoryPhase = (phase: string) => {
    if (cfg.phases.has(phase)) arbiter.memory.phase = phase
  }
  enterMemoryPhase('review')
  const review = cfg.phases.has('review')
    ? await phaseReview({
        baseTarget,
        arbTarget,
        orchestratorKey: keys.orchA,
        insert3Body,
        loops,
        log,
        warmUp: async (iteration) => {
          await runLoops({ loops, durationMs: cfg.warmupS * 1000 }, iteration)
        },
        measure: (server, iteration) => measure(server, window, iteration),
      })
    : undefined
  enterMemoryPhase('reconcile')
  const reconcile = cfg.phases.has('reconcile')
    ? await phaseReconcile({
        arbTarget,
        baseTarget,
        key: keys.scout,
        insert3Body,
        loops,
        warmupS: cfg.warmupS,
        durationS: cfg.durationS,
        measure,
        log,
      })
    : undefined
  const read = cfg.phases.has('read') ? await phaseRead(run) : undefined
  const scale = cfg.phases.has('scale') ? await phaseScale(run) : undefined
  enterMemoryPhase('large-bodies')
  const largeBodies = cfg.phases.has('large-bodies')
    ? await measureLargeBodies({ origin: arbiter.origin, orchestratorKey: keys.orchA })
    : undefined
  const worstCase = cfg.phases.has('worst-case')
    ? await phaseWorstCase({
        arbiter,
        keys: {
          limits: await createKey(arbTarget, arbiter.adminKey, {
            role: 'orchestrator',
            orchestrator_ids: [
              'bench-limits',
              ...Array.from({ length: 16 }, (_, i) => `orch-${String(i).padStart(2, '0')}`),
            ],
            label: 'bench worst case',
          }),
          dashboard: await createKey(arbTarget, arbiter.adminKey, {
            role: 'dashboard',
            label: 'bench reader',
          }),
        },
        log,
      })
    : undefined
  await arbiter.stop()
  const webhooks = cfg.phases.has('webhooks') ? await phaseWebhooks() : undefined
  const audit = cfg.phases.has('audit') ? await phaseAudit(run) : undefined
  const embedded = cfg.phases.has('embedded') ? await phaseEmbedded() : undefined
  baselineMemory.stop()
  const memory = memoryReport(run)

  if (decide) printDecideDetail(decide)
  if (sink) {
    const { requests, bytes } = sink.stats()
    log(`OTLP receiver: ${requests} exports, ${(bytes / 1e6).toFixed(1)} MB of spans`)
  }
  if (scale) printScale(scale)
  if (largeBodies) printLargeBodies('Arbiter', largeBodies)
  if (worstCase) printWorstCase(worstCase)
  printMemory(memory)
  const figures = buildFigures({
    decide,
    review,
    reconcile,
    read,
    audit,
    embedded,
    largeBodies,
    webhooks,
    memory,
  })
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
  await writeResults({
    startedAt,
    git,
    totalS,
    postgres: await withClient(
      cfg.adminUrl,
      async (c) => (await c.query<{ v: string }>('SHOW server_version AS v')).rows[0]?.v ?? null,
    ).catch(() => null),
    figures,
    decide,
    review,
    reconcile,
    read,
    scale,
    audit,
    embedded,
    largeBodies,
    worstCase,
    webhooks,
    memory,
  })
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
