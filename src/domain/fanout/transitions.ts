import type { FanoutDirective, FanoutStatus, FanoutVerdict } from './vocabulary.ts'

/**
 * The fan-out status machine, in one place:
 *
 *   open ──PROCEED──▶ decided
 *   open ──HALT─────▶ halted ──resolution──▶ resolved
 *   open ──REEVALUATE──▶ open (waiting for the workers' next returns)
 *
 * Only an open fan-out is decided, only a halted one resolved.
 */
export type FanoutEvent =
  | { type: 'manifest_issued'; verdict: FanoutVerdict; directive: FanoutDirective }
  | { type: 'resolved' }

export type FanoutTransition = { ok: true; status: FanoutStatus } | { ok: false; reason: string }

export function transitionFanout(status: FanoutStatus, event: FanoutEvent): FanoutTransition {
  if (event.type === 'resolved') {
    return status === 'halted'
      ? { ok: true, status: 'resolved' }
      : { ok: false, reason: `only a HALTed fan-out can be resolved; this one is ${status}` }
  }
  if (status !== 'open') return { ok: false, reason: `a ${status} fan-out is already decided` }
  return { ok: true, status: fanoutStatusAfter(event.verdict, event.directive) }
}

/**
 * The fan-out's status once a manifest with this verdict and directive is its current one: a
 * REEVALUATE leaves it open for the worker's next return; HALT waits for a human resolution.
 */
export function fanoutStatusAfter(verdict: FanoutVerdict, directive: FanoutDirective): FanoutStatus {
  if (verdict === 'HUMAN_RESOLVED') return 'resolved'
  if (directive === 'REEVALUATE') return 'open'
  return directive === 'HALT' ? 'halted' : 'decided'
}
