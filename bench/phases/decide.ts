import { cfg } from '../config.ts'
import { type Recorder, runLoops } from '../load.ts'
import { type LoopFigures, log, measuredLoops, type Run } from '../run-context.ts'
import { type SequencingLag, SequencingLagSampler } from '../sequencing-lag.ts'
import { decidePath } from '../workloads.ts'

/** Phase 1, decide: the full orchestrator path (create, 2 interpretations, evaluate) vs POST /insert3. */
export interface DecidePhase {
  loops: number
  baseline: LoopFigures
  arbiter: LoopFigures
  throughputRatio: number
  p50Ratio: number
  p99Ratio: number
  /** Commit of a change → its record in the log, over the Arbiter's measured window (sequencing-lag.ts). */
  sequencingLag: SequencingLag
}

export async function phaseDecide(run: Run): Promise<DecidePhase> {
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
  const lag = new SequencingLagSampler(run.mainDb.url)
  await lag.start()
  const arbiter = await measuredLoops(
    run.mainDb.name,
    run.arbiter.proc.pid,
    { loops, durationMs: cfg.durationS * 1000 },
    decide,
  )
  const sequencingLag = await lag.stop()
  return {
    sequencingLag,
    loops,
    baseline,
    arbiter,
    throughputRatio: arbiter.requestsPerSecond / baseline.requestsPerSecond,
    p50Ratio: arbiter.latency.p50 / baseline.latency.p50,
    p99Ratio: arbiter.latency.p99 / baseline.latency.p99,
  }
}
