import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  acceptsInputs,
  type OutcomeEvent,
  type OutcomeState,
  transitionOutcome,
} from '../../../src/domain/outcome/transitions.ts'
import { OUTCOME_DIRECTIVES, OUTCOME_STATUSES } from '../../../src/domain/outcome/vocabulary.ts'

const state = (status: OutcomeState['status'], rounds = 0): OutcomeState => ({
  status,
  reevaluation_rounds: rounds,
})

describe('transitionOutcome', () => {
  const rows: { from: OutcomeState; event: OutcomeEvent; to: OutcomeState | 'refused' }[] = [
    { from: state('open'), event: { type: 'manifest_issued', directive: 'PROCEED' }, to: state('decided') },
    { from: state('open'), event: { type: 'manifest_issued', directive: 'HALT' }, to: state('halted') },
    {
      from: state('open'),
      event: { type: 'manifest_issued', directive: 'REEVALUATE' },
      to: state('open', 1),
    },
    {
      from: state('open', 1),
      event: { type: 'manifest_issued', directive: 'REEVALUATE' },
      to: state('open', 2),
    },
    { from: state('open', 2), event: { type: 'manifest_issued', directive: 'HALT' }, to: state('halted', 2) },
    { from: state('halted', 1), event: { type: 'resolution_recorded' }, to: state('resolved', 1) },
    { from: state('decided'), event: { type: 'manifest_issued', directive: 'PROCEED' }, to: 'refused' },
    { from: state('halted'), event: { type: 'manifest_issued', directive: 'HALT' }, to: 'refused' },
    { from: state('resolved'), event: { type: 'manifest_issued', directive: 'REEVALUATE' }, to: 'refused' },
    { from: state('open'), event: { type: 'resolution_recorded' }, to: 'refused' },
    { from: state('decided'), event: { type: 'resolution_recorded' }, to: 'refused' },
    { from: state('resolved'), event: { type: 'resolution_recorded' }, to: 'refused' },
  ]
  for (const { from, event, to } of rows) {
    const name = event.type === 'manifest_issued' ? event.directive : 'resolution'
    it(`${from.status} (round ${from.reevaluation_rounds}) + ${name} → ${to === 'refused' ? to : to.status}`, () => {
      const result = transitionOutcome(from, event)
      if (to === 'refused') {
        assert.equal(result.ok, false)
        assert.match((result as { reason: string }).reason, new RegExp(from.status))
      } else {
        assert.deepEqual(result, { ok: true, state: to })
      }
    })
  }

  it('never leaves a final status and never lowers the round count', () => {
    const anyState = fc.record({
      status: fc.constantFrom(...OUTCOME_STATUSES),
      reevaluation_rounds: fc.nat({ max: 5 }),
    })
    const anyEvent: fc.Arbitrary<OutcomeEvent> = fc.oneof(
      fc
        .constantFrom(...OUTCOME_DIRECTIVES)
        .map((directive) => ({ type: 'manifest_issued' as const, directive })),
      fc.constant({ type: 'resolution_recorded' as const }),
    )
    fc.assert(
      fc.property(anyState, fc.array(anyEvent, { maxLength: 6 }), (start, events) => {
        let current = start
        for (const event of events) {
          const result = transitionOutcome(current, event)
          if (!result.ok) continue
          if (current.status !== 'open') assert.equal(current.status, 'halted', 'only a HALT moves on')
          assert.ok(result.state.reevaluation_rounds >= current.reevaluation_rounds)
          current = result.state
        }
      }),
    )
  })
})

describe('acceptsInputs', () => {
  for (const status of OUTCOME_STATUSES) {
    it(`${status} → ${status === 'open'}`, () => assert.equal(acceptsInputs(status), status === 'open'))
  }
})
