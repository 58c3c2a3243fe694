/**
 * CPU-heavy steps that must run on the event loop (building a page of megabyte manifests, validating a large body,
 * checking a large input against the limits, deciding and signing a large case) take turns: each step waits for
 * its turn, and one step runs per turn of the event loop, so that whatever else became ready meanwhile (a
 * `/healthz`, a small request, the database's answers) runs between two of them rather than behind all of them.
 * Without this, a dozen such steps that become ready at the same moment — a dozen list readers whose pages arrive
 * together, a burst of large results — run back to back, and the loop answers nothing else for their sum.
 *
 * Turns are taken in order (first come, first served) and cost one pass of the loop each: nothing for a step that
 * is heavy anyway, which is why only heavy steps take one. The step is what runs after `await takeTurn()` up to its
 * next `await` of real I/O.
 */

const waiting: (() => void)[] = []
let scheduled = false

/** Resolves when it is this step's turn: in a later turn of the event loop than any step before it. */
export function takeTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve)
    if (!scheduled) {
      scheduled = true
      setImmediate(giveTurn)
    }
  })
}

/** Steps waiting for their turn (for tests). */
export function stepsWaiting(): number {
  return waiting.length
}

function giveTurn(): void {
  const next = waiting.shift()
  // Scheduled from within this callback, the next turn comes after the loop has polled for I/O again.
  if (waiting.length > 0) setImmediate(giveTurn)
  else scheduled = false
  next?.()
}
