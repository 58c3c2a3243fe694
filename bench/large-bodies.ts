import { buildForBench } from './build.ts'
import { cfg, repoRoot } from './config.ts'
import { createDatabase } from './database.ts'
import { HttpTarget } from './load.ts'
import { type LargeBodiesPhase, measureLargeBodies, printLargeBodies } from './phases/large-bodies.ts'
import { cleanUpOnSignals, cleanupAll, log, onCleanup } from './run-context.ts'
import { startArbiter } from './servers.ts'
import { createKey } from './workloads.ts'

/**
 * `npx tsx bench/large-bodies.ts`: does a burst of large bodies stall the event loop? Ten ~1 MiB evidence bodies
 * at once while `/healthz` is polled; prints the worst `/healthz` delay (target ≤ 100 ms). Also a phase of
 * `npm run bench` (`BENCH_PHASES=large-bodies`).
 *
 * `BENCH_COMPARE_ROOT=/path/to/other/checkout` measures that checkout's Arbiter first ("before") and this one's
 * second ("after"), each on a database of its own. `BENCH_LARGE_BURSTS` (3) bursts per server.
 */

async function measureCheckout(root: string, tag: string): Promise<LargeBodiesPhase> {
  const db = await createDatabase(cfg.adminUrl, `large_${tag}`, cfg.dbSettings)
  onCleanup(`drop ${tag} database`, () => db.drop())
  const arbiter = await startArbiter({
    repoRoot: root,
    databaseUrl: db.url,
    poolMax: cfg.poolMax,
    name: `arbiter-${tag}`,
    cpuProfileDir: cfg.cpuProfileDir,
  })
  onCleanup(`stop arbiter ${tag}`, () => arbiter.stop())
  log(`${tag}: Arbiter of ${root} ready (pid ${arbiter.proc.pid})`)
  const target = new HttpTarget(arbiter.origin, 1)
  try {
    const orchestratorKey = await createKey(target, arbiter.adminKey, {
      role: 'orchestrator',
      orchestrator_ids: ['orch-a'],
      label: 'bench large bodies',
    })
    return await measureLargeBodies({
      origin: arbiter.origin,
      orchestratorKey,
      bursts: Math.max(1, Number(process.env.BENCH_LARGE_BURSTS ?? 3) || 3),
    })
  } finally {
    await target.close()
    await arbiter.stop()
    await db.drop()
  }
}

async function main(): Promise<number> {
  cleanUpOnSignals()
  const compareRoot = process.env.BENCH_COMPARE_ROOT
  buildForBench(compareRoot ? [compareRoot, cfg.arbiterRoot] : [cfg.arbiterRoot])
  const before = compareRoot ? await measureCheckout(compareRoot, 'before') : undefined
  const after = await measureCheckout(cfg.arbiterRoot, 'after')
  if (before && compareRoot) printLargeBodies(`before: ${compareRoot}`, before)
  printLargeBodies(
    `${before ? 'after: ' : ''}${cfg.arbiterRoot === repoRoot ? 'this checkout' : cfg.arbiterRoot}`,
    after,
  )
  return after.result === 'PASS' ? 0 : 1
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
