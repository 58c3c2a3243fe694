import assert from 'node:assert/strict'
import { test } from 'node:test'
import { runLoops } from '../../bench/load.ts'

test('paced loops start no more iterations than the rate allows, however many loops are free', async () => {
  const starts: number[] = []
  const before = performance.now()
  const result = await runLoops({ loops: 8, durationMs: 300, iterationsPerSecond: 50 }, async () => {
    starts.push(performance.now())
  })
  // The n-th iteration starts n / rate seconds after the first at the earliest: at most 0.3 × 50 + 1 in 300 ms,
  // where eight free loops unpaced would start thousands.
  assert.ok(result.iterations <= 16, `${result.iterations} iterations`)
  assert.ok(result.iterations >= 1)
  const sorted = [...starts].sort((a, b) => a - b)
  for (let n = 1; n < sorted.length; n++) {
    // Timers fire late, not early (but for the rounding of their milliseconds).
    assert.ok(sorted[n]! - before >= (n * 1000) / 50 - 2, `iteration ${n} started too early`)
  }
})
