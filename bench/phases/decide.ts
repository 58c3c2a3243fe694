import { setTimeout as sleep } from 'node:timers/promises'
import { cfg } from '../config.ts'
import { type Recorder, runLoops } from '../load.ts'
import { type LoopFigures, log, measuredLoops, type Run } from '../run-context.ts'
import { recordKey, type SequencingLag, SequencingLagSampler } from '../sequencing-lag.ts'
import { decidePath } from '../workloads.ts'

/** One measured window of each side, the baseline's first, and their ratios. */
export interface DecideRound {
  baseline: LoopFigures
  arbiter: LoopFigures
  throughputRatio: number
  p50Ratio: number
  p99Ratio: number
  /** Arbiter's server CPU per request over the baseline's. */
  serverCpuRatio: number
}

/**
 * Phase 1, decide: the full orchestrator path (create, 2 interpretations, evaluate) vs POST /insert3, in
 * `cfg.decideRounds` interleaved rounds (baseline window, then Arbiter's, on the same two servers). Each headline
 * ratio is the median over the rounds; `baseline` and `arbiter` are the round with the median throughput ratio.
 * Interleaving puts both sides under the same machine conditions in turn, and the later rounds measure both
 * servers warm, as they run in production, rather than in their first seconds (JIT compilation included).
 */
export interface DecidePhase {
  loops: number
  rounds: DecideRound[]
  baseline: LoopFigures
  arbiter: LoopFigures
  throughputRatio: number
  p50Ratio: number
  p99Ratio: number
  serverCpuRatio: number
  /** Commit of a change → its record in the log, over the Arbiter's measured windows (sequencing-lag.ts). */
  sequencingLag: SequencingLag
}

export async function phaseDecide(run: Run): Promise<DecidePhase> {
  const loops = cfg.connections
  const insert3Body = JSON.stringify(run.evidence1k)
  const insert3 = async (_loop: number, rec: Recorder) => {
    await run.baseTarget.call(rec, 'POST', '/insert3', { body: insert3Body, expect: [201], label: 'insert3' })
  }
  let lag: SequencingLagSampler | null = null
  const decide = async (loop: number, rec: Recorder) => {
    const result = await decidePath(run.arbTarget, rec, {
      orchestrators: ['orch-a', 'orch-b'],
      creatorKey: run.keys.orchA,
      keyFor: (id) => (id === 'orch-a' ? run.keys.orchA : run.keys.orchB),
      evidence: run.evidence1k,
      expectAll: true,
      subagentId: `refund-agent-${loop % 8}`,
      onAcknowledged: (kind, outcomeId, orchestratorId) =>
        lag?.acknowledged(recordKey(kind, outcomeId, orchestratorId), Date.now()),
    })
    run.manifestIds.push(result.manifestId)
  }
  const window = { loops, durationMs: cfg.durationS * 1000 }
  log(
    `decide: baseline POST /insert3 vs Arbiter's 4-call path, ${loops} loops, ${cfg.warmupS}s warm-up each, then ${cfg.decideRounds} interleaved rounds of ${cfg.durationS}s each side`,
  )
  await runLoops({ loops, durationMs: cfg.warmupS * 1000 }, insert3)
  run.arbiter.memory.phase = 'decide'
  await runLoops({ loops, durationMs: cfg.warmupS * 1000 }, decide)
  const sampler = new SequencingLagSampler(run.mainDb.url)
  await sampler.start()
  await sampler.pause()
  lag = sampler
  const rounds: DecideRound[] = []
  for (let round = 1; round <= cfg.decideRounds; round++) {
    const baseline = await measuredLoops(run.mainDb.name, run.baseline.proc.pid, window, insert3)
    sampler.resume()
    const arbiter = await measuredLoops(run.mainDb.name, run.arbiter.proc.pid, window, decide)
    // The window's last records are sequenced within the linger and a batch: seen before the sampler pauses.
    await sleep(500)
    await sampler.pause()
    const measured = decideRound(baseline, arbiter)
    rounds.push(measured)
    log(
      `decide round ${round}: throughput ${measured.throughputRatio.toFixed(2)}×, p99 ${measured.p99Ratio.toFixed(2)}×, server CPU per request ${measured.serverCpuRatio.toFixed(2)}×`,
    )
  }
  const sequencingLag = await sampler.stop()
  const typical = medianRound(rounds, (r) => r.throughputRatio)
  return {
    loops,
    rounds,
    baseline: typical.baseline,
    arbiter: typical.arbiter,
    throughputRatio: typical.throughputRatio,
    p50Ratio: medianRound(rounds, (r) => r.p50Ratio).p50Ratio,
    p99Ratio: medianRound(rounds, (r) => r.p99Ratio).p99Ratio,
    serverCpuRatio: medianRound(rounds, (r) => r.serverCpuRatio).serverCpuRatio,
    sequencingLag,
  }
}

function decideRound(baseline: LoopFigures, arbiter: LoopFigures): DecideRound {
  return {
    baseline,
    arbiter,
    throughputRatio: arbiter.requestsPerSecond / baseline.requestsPerSecond,
    p50Ratio: arbiter.latency.p50 / baseline.latency.p50,
    p99Ratio: arbiter.latency.p99 / baseline.latency.p99,
    serverCpuRatio: arbiter.cpu.serverMsPerRequest / baseline.cpu.serverMsPerRequest,
  }
}

/** The round whose `ratio` is the median (the lower middle one for an even count). */
export function medianRound(
  rounds: readonly DecideRound[],
  ratio: (round: DecideRound) => number,
): DecideRound {
  const sorted = [...rounds].sort((a, b) => ratio(a) - ratio(b))
  const round = sorted[Math.floor((sorted.length - 1) / 2)]
  if (round === undefined) throw new Error('no decide rounds were measured')
  return round
}
