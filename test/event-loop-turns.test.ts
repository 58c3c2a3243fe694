import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { stepsWaiting, takeTurn } from '../src/event-loop-turns.ts'

function busy(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // holds the thread, as a heavy step does
  }
}

describe('takeTurn', () => {
  it('runs one step per turn of the event loop: what became ready meanwhile runs between two steps', async () => {
    const order: string[] = []
    const step = (name: string) =>
      takeTurn().then(() => {
        // A timer due before this step ends is what a ready socket is to a request: it must not wait for
        // every other step that was ready at the same time.
        setTimeout(() => order.push(`timer after ${name}`), 0)
        busy(5)
        order.push(name)
      })
    await Promise.all([step('a'), step('b'), step('c')])
    await new Promise((resolve) => setTimeout(resolve, 5))
    assert.deepEqual(order.slice(0, 5), ['a', 'timer after a', 'b', 'timer after b', 'c'])
    assert.equal(stepsWaiting(), 0)
  })

  it('gives turns in the order they were asked for', async () => {
    const order: number[] = []
    await Promise.all(Array.from({ length: 20 }, (_, i) => takeTurn().then(() => order.push(i))))
    assert.deepEqual(
      order,
      Array.from({ length: 20 }, (_, i) => i),
    )
  })
})
