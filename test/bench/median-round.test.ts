import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type DecideRound, medianRound } from '../../bench/decide-rounds.ts'

/** A round that differs from others only in the ratios the test reads. */
function round(index: number, throughputRatio: number, serverCpuRatio: number): DecideRound {
  return {
    round: index,
    arbiterFirst: index % 2 === 0,
    baseline: {} as DecideRound['baseline'],
    arbiter: {} as DecideRound['arbiter'],
    throughputRatio,
    p50Ratio: 1,
    p99Ratio: 1,
    serverCpuRatio,
  }
}

test('the decide phase reports the round whose ratio is the median, each figure on its own', () => {
  const rounds = [round(1, 0.7, 2.5), round(2, 0.5, 1.7), round(3, 0.6, 1.9)]
  assert.equal(medianRound(rounds, (r) => r.throughputRatio).round, 3)
  assert.equal(medianRound(rounds, (r) => r.serverCpuRatio).round, 3)
  const five = [...rounds, round(4, 0.65, 1.8), round(5, 0.4, 3)]
  assert.equal(medianRound(five, (r) => r.throughputRatio).round, 3)
  assert.equal(medianRound(five, (r) => r.serverCpuRatio).round, 3)
  assert.equal(medianRound([rounds[0]!], (r) => r.throughputRatio).round, 1)
  // The rounds keep their order for the log.
  assert.deepEqual(
    rounds.map((r) => r.round),
    [1, 2, 3],
  )
  // An even number of rounds has no middle one: refused rather than picking the better or the worse.
  assert.throws(() => medianRound(rounds.slice(0, 2), (r) => r.throughputRatio), /odd number/)
  assert.throws(() => medianRound([], (r) => r.throughputRatio), /odd number/)
})
