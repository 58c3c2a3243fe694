import { cfg } from '../config.ts'
import { type DecideRound, equalLoadRate, interleavedRounds, medianRound } from '../decide-rounds.ts'
import { type Recorder, runLoops } from '../load.ts'
import { log, measuredLoops, type Run } from '../run-context.ts'
import { recordKey, type SequencingLag, SequencingLagSampler } from '../sequencing-lag.ts'
import { decidePath } from '../workloads.ts'

/**
 * Phase 1, decide: the full orchestrator path (create, 2 interpretations, evaluate) vs POST /insert3, in
 * `cfg.decideRounds` interleaved rounds (an odd number; a window of each side on the same two servers, the order
 * alternating). Each headline ratio is the median over the rounds; `baseline` and `arbiter` are the round with the
 * median throughput ratio. Interleaving puts both sides under the same machine conditions in turn, and the later
 * rounds measure both servers warm, as they run in production, rather than a few seconds after start-up (JIT
 * compilation included).
 */
export interface DecidePhase extends Omit<DecideRound, 'round' | 'arbiterFirst'> {
  loops: number
  rounds: DecideRound[]
  /** Commit of a change → its record in the log, over the Arbiter's measured windows (sequencing-lag.ts). */
  sequencingLag: SequencingLag
  /**
   * The same two workloads offered the same request rate (`equalLoadRate`: 70% of Arbiter's median throughput,
   * which both sustain), in as many interleaved rounds: CPU per request compared at equal load. A server's CPU per
   * request falls as its rate rises (more requests share each wake-up, each system call's fixed cost), so the
   * windows above, each side at its own saturation, charge the slower side for being slower.
   */
  paced: {
    requestsPerSecond: number
    rounds: DecideRound[]
    serverCpuRatio: number
    /** The sequencing lag over Arbiter's paced windows. */
    sequencingLag: SequencingLag
  }
}

/** HTTP requests in one decide path of two orchestrators: create, two interpretations, evaluate. */
const DECIDE_PATH_REQUESTS = 4

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
    `decide: baseline POST /insert3 vs Arbiter's 4-call path, ${loops} loops, ${cfg.decideWarmupS}s warm-up each, then ${cfg.decideRounds} interleaved rounds of ${cfg.durationS}s each side`,
  )
  await runLoops({ loops, durationMs: cfg.decideWarmupS * 1000 }, insert3)
  run.arbiter.memory.phase = 'decide'
  await runLoops({ loops, durationMs: cfg.decideWarmupS * 1000 }, decide)
  const sampler = new SequencingLagSampler(run.mainDb.url)
  await sampler.start()
  await sampler.pause()
  lag = sampler
  const measureBaseline = () => measuredLoops(run.mainDb.name, run.baseline.proc.pid, window, insert3)
  const measureArbiter = async () => {
    sampler.resume()
    const figures = await measuredLoops(run.mainDb.name, run.arbiter.proc.pid, window, decide)
    // Every record of the window is in the log and seen before the sampler pauses.
    await sampler.caughtUp()
    await sampler.pause()
    return figures
  }
  const rounds = await interleavedRounds(
    cfg.decideRounds,
    { baseline: measureBaseline, arbiter: measureArbiter },
    (measured) =>
      log(
        `decide round ${measured.round} (${measured.arbiterFirst ? 'Arbiter' : 'baseline'} first): throughput ${measured.throughputRatio.toFixed(2)}×, p99 ${measured.p99Ratio.toFixed(2)}×, server CPU per request ${measured.serverCpuRatio.toFixed(2)}×`,
      ),
  )
  const sequencingLag = await sampler.stop()
  const typical = medianRound(rounds, (r) => r.throughputRatio)

  const pacedRate = equalLoadRate(rounds)
  log(`decide at equal load: both sides paced at ${pacedRate} req/s, ${cfg.decideRounds} interleaved rounds`)
  const pacedSampler = new SequencingLagSampler(run.mainDb.url)
  await pacedSampler.start()
  await pacedSampler.pause()
  lag = pacedSampler
  const measureArbiterPaced = async () => {
    pacedSampler.resume()
    const figures = await measuredLoops(
      run.mainDb.name,
      run.arbiter.proc.pid,
      { ...window, iterationsPerSecond: pacedRate / DECIDE_PATH_REQUESTS },
      decide,
    )
    await pacedSampler.caughtUp()
    await pacedSampler.pause()
    return figures
  }
  const measureBaselinePaced = () =>
    measuredLoops(
      run.mainDb.name,
      run.baseline.proc.pid,
      { ...window, iterationsPerSecond: pacedRate },
      insert3,
    )
  const pacedRounds = await interleavedRounds(
    cfg.decideRounds,
    { baseline: measureBaselinePaced, arbiter: measureArbiterPaced },
    (measured) =>
      log(
        `decide at equal load, round ${measured.round}: ${measured.baseline.requestsPerSecond.toFixed(0)} / ${measured.arbiter.requestsPerSecond.toFixed(0)} req/s, server CPU per request ${measured.serverCpuRatio.toFixed(2)}×`,
      ),
  )
  const pacedLag = await pacedSampler.stop()
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
    paced: {
      requestsPerSecond: pacedRate,
      rounds: pacedRounds,
      serverCpuRatio: medianRound(pacedRounds, (r) => r.serverCpuRatio).serverCpuRatio,
      sequencingLag: pacedLag,
    },
  }
}
