import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type DecideRound, medianRound } from '../../bench/phases/decide.ts'

/** A round that differs from others only in the ratios the test reads. */
function round(throughputRatio: number, serverCpuRatio: number): DecideRound {
  return {
    baseline: {} as DecideRound['baseline'],
    arbiter: {} as DecideRound['arbiter'],
    throughputRatio,
    p50Ratio: 1,
    p99Ratio: 1,
    serverCpuRatio,
  }
}

test('the decide phase reports the round whose ratio is the median, each figure on its own', () => {
  const rounds = [round(0.7, 2.5), round(0.5, 1.8), round(0.6, 1.9)]
  assert.equal(
    medianRound(rounds, (r) => r.throughputRatio),
    rounds[2],
  )
  assert.equal(
    medianRound(rounds, (r) => r.serverCpuRatio),
    rounds[2],
  )
  assert.equal(
    medianRound([rounds[0]!], (r) => r.throughputRatio),
    rounds[0],
  )
  // An even count takes the lower middle round, never an average no round measured.
  assert.equal(
    medianRound(rounds.slice(0, 2), (r) => r.serverCpuRatio),
    rounds[1],
  )
  // The rounds keep their order for the log.
  assert.deepEqual(
    rounds.map((r) => r.throughputRatio),
    [0.7, 0.5, 0.6],
  )
  assert.throws(() => medianRound([], (r) => r.throughputRatio), /no decide rounds/)
})
