import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { DecisionWorkers, decideCase } from '../../src/engine/decision-workers.ts'

/**
 * The decision workers (src/engine/decision-workers.ts on src/worker-threads.ts): a task the worker cannot take
 * fails alone and leaves the worker free for the next, and a decision the worker cannot make is made on the
 * calling thread.
 */

const workers = new DecisionWorkers(1)
after(() => workers.close())

/** A fan-out still waiting for its only subtask: the smallest decision the fan-out kind makes. */
const fanout = {
  id: 'f',
  facts: ['x'],
  subtasks: [{ subtask_id: 'a', facts: ['x'] }],
  policy: {},
}
const waiting = { results: [], deadline_passed: false, closed: false }

describe('decision workers', () => {
  it('refuses a task it cannot send and stays free for the next one', async () => {
    await assert.rejects(
      workers.run({ kind: 'fanout', case: { ...fanout, hook: () => 1 }, input: waiting, groundTruth: null }),
    )
    assert.equal(workers.running, 0)
    const answer = await workers.run({ kind: 'fanout', case: fanout, input: waiting, groundTruth: null })
    assert.deepEqual(answer.decision, { kind: 'pending', pending: { missing_subtasks: ['a'] } })
    assert.equal(workers.tasksDone, 1)
  })

  it('decides on the calling thread when the worker cannot', async () => {
    let calledHere = 0
    const kind = {
      name: 'unknown-kind',
      offload: () => true,
      decide: () => {
        calledHere += 1
        return { kind: 'nothing_to_decide' as const, detail: 'decided here' }
      },
    }
    const decision = await decideCase(workers, kind, {}, {}, null)
    assert.deepEqual(decision, { kind: 'nothing_to_decide', detail: 'decided here' })
    assert.equal(calledHere, 1)
  })
})
