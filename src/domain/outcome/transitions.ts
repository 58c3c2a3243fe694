import type { OutcomeDirective, OutcomeStatus } from './vocabulary.ts'

/**
 * The outcome status machine, in one place:
 *
 *   open ──PROCEED──▶ decided
 *   open ──HALT─────▶ halted ──resolution──▶ resolved
 *   open ──REEVALUATE──▶ open (one more re-evaluation round)
 *
 * Only an open outcome takes new inputs (evidence, revised interpretations); after a final decision a different
 * interpretation is kept as dissent and never changes the decision.
 */
export interface OutcomeState {
  status: OutcomeStatus
  reevaluation_rounds: number
}

export type OutcomeEvent =
  | { type: 'manifest_issued'; directive: OutcomeDirective }
  | { type: 'resolution_recorded' }

export type OutcomeTransition = { ok: true; state: OutcomeState } | { ok: false; reason: string }

const AFTER_MANIFEST: Record<OutcomeDirective, OutcomeStatus> = {
  PROCEED: 'decided',
  HALT: 'halted',
  REEVALUATE: 'open',
}

export function transitionOutcome(state: OutcomeState, event: OutcomeEvent): OutcomeTransition {
  if (event.type === 'manifest_issued') {
    if (state.status !== 'open') {
      return { ok: false, reason: `a ${state.status} outcome is already decided` }
    }
    return {
      ok: true,
      state: {
        status: AFTER_MANIFEST[event.directive],
        reevaluation_rounds: state.reevaluation_rounds + (event.directive === 'REEVALUATE' ? 1 : 0),
      },
    }
  }
  if (state.status !== 'halted') {
    return { ok: false, reason: `only a HALTed outcome can be resolved; this one is ${state.status}` }
  }
  return { ok: true, state: { ...state, status: 'resolved' } }
}

/** True while the outcome takes new evidence and revised interpretations. */
export function acceptsInputs(status: OutcomeStatus): boolean {
  return status === 'open'
}
