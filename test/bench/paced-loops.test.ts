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

test('paced loops end with the window: no loop waits for a start past it', async () => {
  // Eight loops at 5 iterations a second over 300 ms: starts at 0 and 200 ms; the next ones, from 400 ms on, are
  // past the window, and a loop that slept until its start there would stretch the window to 1.4 s.
  const result = await runLoops({ loops: 8, durationMs: 300, iterationsPerSecond: 5 }, async () => {})
  // (The second may find the window over already on a busy machine.)
  assert.ok(result.iterations >= 1 && result.iterations <= 2, `${result.iterations} iterations`)
  assert.ok(result.elapsedMs < 1_000, `the window took ${result.elapsedMs} ms`)
})
