import type { LatencySummary } from './load.ts'
import type { CpuFigures, LoopFigures } from './run-context.ts'

/** What a measured window of either generator (closed loops or autocannon) tells a round. */
export interface WindowFigures {
  requestsPerSecond: number
  latency: LatencySummary
  cpu: CpuFigures
}

/** One measured window of each side in an interleaved phase (decide, read), and their ratios. */
export interface DecideRound<F extends WindowFigures = LoopFigures> {
  /** 1, 2, …: the order the rounds ran in. */
  round: number
  /** Whether Arbiter's window ran before the baseline's (the order alternates from round to round). */
  arbiterFirst: boolean
  baseline: F
  arbiter: F
  throughputRatio: number
  p50Ratio: number
  p99Ratio: number
  /** Arbiter's server CPU per request over the baseline's. */
  serverCpuRatio: number
}

export function decideRound<F extends WindowFigures>(
  round: number,
  arbiterFirst: boolean,
  baseline: F,
  arbiter: F,
): DecideRound<F> {
  return {
    round,
    arbiterFirst,
    baseline,
    arbiter,
    throughputRatio: arbiter.requestsPerSecond / baseline.requestsPerSecond,
    p50Ratio: arbiter.latency.p50 / baseline.latency.p50,
    p99Ratio: arbiter.latency.p99 / baseline.latency.p99,
    serverCpuRatio: arbiter.cpu.serverMsPerRequest / baseline.cpu.serverMsPerRequest,
  }
}

/**
 * Interleaved rounds: `rounds` windows of each side, the baseline's first in odd rounds and Arbiter's first in even
 * ones, so that neither always measures in the other's aftermath (its autovacuum, its last checkpoints).
 */
export async function interleavedRounds<F extends WindowFigures>(
  rounds: number,
  measure: { baseline: () => Promise<F>; arbiter: () => Promise<F> },
  logRound: (round: DecideRound<F>) => void,
): Promise<DecideRound<F>[]> {
  const measured: DecideRound<F>[] = []
  for (let round = 1; round <= rounds; round++) {
    const arbiterFirst = round % 2 === 0
    const arbiter = arbiterFirst ? await measure.arbiter() : null
    const baseline = await measure.baseline()
    const result = decideRound(round, arbiterFirst, baseline, arbiter ?? (await measure.arbiter()))
    measured.push(result)
    logRound(result)
  }
  return measured
}

/** The share of Arbiter's saturated throughput both sides are paced at for the equal-load rounds. */
export const PACED_SHARE = 0.7

/** The request rate both sides are offered at equal load: PACED_SHARE of Arbiter's median saturated rate. */
export function equalLoadRate(rounds: readonly DecideRound<WindowFigures>[]): number {
  const arbiterRates = rounds.map((r) => r.arbiter.requestsPerSecond).sort((x, y) => x - y)
  return Math.floor(PACED_SHARE * arbiterRates[(arbiterRates.length - 1) / 2]!)
}

/** The round whose `ratio` is the median of an odd number of rounds (an even number has no middle round). */
export function medianRound<F extends WindowFigures>(
  rounds: readonly DecideRound<F>[],
  ratio: (round: DecideRound<F>) => number,
): DecideRound<F> {
  if (rounds.length % 2 === 0) {
    throw new Error(`the median needs an odd number of decide rounds, got ${rounds.length}`)
  }
  const sorted = [...rounds].sort((a, b) => ratio(a) - ratio(b))
  return sorted[(sorted.length - 1) / 2]!
}
