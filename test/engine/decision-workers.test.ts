import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { fanoutCase } from '../../src/cases/fanout/kind.ts'
import { DecisionWorkers, decideCase, moduleBeside } from '../../src/engine/decision-workers.ts'

/**
 * The decision workers (src/engine/decision-workers.ts on src/worker-threads.ts): a task the worker cannot take
 * fails alone and leaves the worker free for the next, a decision the worker cannot make is made on the calling
 * thread, and the worker imports whatever decision a kind names, so a new kind adds nothing to it.
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
const fanoutDecision = fanoutCase.offload!.decision

describe('decision workers', () => {
  it('refuses a task it cannot send and stays free for the next one', async () => {
    await assert.rejects(
      workers.run({
        decision: fanoutDecision,
        case: { ...fanout, hook: () => 1 },
        input: waiting,
        groundTruth: null,
      }),
    )
    assert.equal(workers.running, 0)
    const answer = await workers.run({
      decision: fanoutDecision,
      case: fanout,
      input: waiting,
      groundTruth: null,
    })
    assert.deepEqual(answer.decision, { kind: 'pending', pending: { missing_subtasks: ['a'] } })
    assert.equal(workers.tasksDone, 1)
  })

  it('decides on the calling thread when the worker cannot', async () => {
    let calledHere = 0
    const kind = {
      offload: {
        when: () => true,
        decision: moduleBeside(import.meta.url, './fixtures/counting-decision', 'nothing'),
      },
      decide: () => {
        calledHere += 1
        return { kind: 'nothing_to_decide' as const, detail: 'decided here' }
      },
    }
    const decision = await decideCase(workers, kind, {}, {}, null)
    assert.deepEqual(decision, { kind: 'nothing_to_decide', detail: 'decided here' })
    assert.equal(calledHere, 1)
  })

  it("runs a decision no module of src/ names, from the kind's offload setting alone", async () => {
    const done = workers.tasksDone
    const kind = {
      offload: {
        when: () => true,
        decision: moduleBeside(import.meta.url, './fixtures/counting-decision', 'decideByCount'),
      },
      decide: () => assert.fail('decided on the calling thread'),
    }
    const decision = await decideCase(workers, kind, { id: 'c' }, { items: [1, 2, 3] }, null)
    assert.deepEqual(decision, {
      kind: 'decided',
      decided: { content: { id: 'c', total: 6, items: [1, 2, 3] } },
    })
    assert.equal(workers.tasksDone, done + 1)
  })
})
