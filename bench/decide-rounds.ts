import type { LoopFigures } from './run-context.ts'

/** One measured window of each side in the decide phase, and their ratios. */
export interface DecideRound {
  /** 1, 2, …: the order the rounds ran in. */
  round: number
  /** Whether Arbiter's window ran before the baseline's (the order alternates from round to round). */
  arbiterFirst: boolean
  baseline: LoopFigures
  arbiter: LoopFigures
  throughputRatio: number
  p50Ratio: number
  p99Ratio: number
  /** Arbiter's server CPU per request over the baseline's. */
  serverCpuRatio: number
}

export function decideRound(
  round: number,
  arbiterFirst: boolean,
  baseline: LoopFigures,
  arbiter: LoopFigures,
): DecideRound {
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

/** The round whose `ratio` is the median of an odd number of rounds (an even number has no middle round). */
export function medianRound(
  rounds: readonly DecideRound[],
  ratio: (round: DecideRound) => number,
): DecideRound {
  if (rounds.length % 2 === 0) {
    throw new Error(`the median needs an odd number of decide rounds, got ${rounds.length}`)
  }
  const sorted = [...rounds].sort((a, b) => ratio(a) - ratio(b))
  return sorted[(sorted.length - 1) / 2]!
}
