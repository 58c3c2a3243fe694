/**
 * A human resolution of a halted fan-out: someone with the authority to decide answers each contested
 * fact (or states that it has no answer), and the answers replace what reconciliation could not
 * decide. Everything else the HALT recorded — coverage, reasons, every position and claim — is kept,
 * so the resolved manifest still shows what the workers said and why a person had to choose.
 */

import { canonicalJson, type JsonValue } from '../shared/canonical-json.ts'
import type { FieldError as ProblemFieldError } from '../shared/field-error.ts'
import type { Qualifiers } from './claims.ts'
import { positionOf } from './positions.ts'
import type { Coverage, FactEntry, Position, Reason } from './reconciliation.ts'
import type { FanoutDirective, FanoutVerdict } from './vocabulary.ts'

/** An answer as the resolution body gives it (absent members mean null / `{}`). */
export interface ResolutionAnswer {
  value: JsonValue
  effective_date?: string | null
  qualifiers?: Qualifiers
}

/** One item of the resolution body's `facts`; a null answer means "no answer". */
export interface FactResolution {
  fact: string
  answer: ResolutionAnswer | null
}

/** What a resolution reads of the halted manifest. */
export interface HaltedReconciliation {
  directive: FanoutDirective
  coverage: Coverage
  facts: readonly FactEntry[]
  reasons: readonly Reason[]
}

export interface HumanResolution {
  verdict: Extract<FanoutVerdict, 'HUMAN_RESOLVED'>
  directive: 'PROCEED'
  final: true
  coverage: Coverage
  facts: FactEntry[]
  reasons: Reason[]
}

/** The facts a resolution must answer: the contested ones, sorted. */
export function contestedFacts(halted: Pick<HaltedReconciliation, 'facts'>): string[] {
  return halted.facts.filter((fact) => fact.status === 'contested').map((fact) => fact.fact)
}

/**
 * Why the resolution cannot apply (empty when it can): every contested fact must be answered
 * exactly once, and nothing else may be. Paths are JSON pointers into the resolution body: an item
 * that answers the wrong fact or answers one twice at `/facts/<i>/fact`; a contested fact left
 * unanswered at `/facts`. Items first, in body order; then unanswered facts, sorted.
 */
export function resolutionErrors(
  halted: Pick<HaltedReconciliation, 'facts'>,
  answers: readonly FactResolution[],
): ProblemFieldError[] {
  const statusOf = new Map(halted.facts.map((fact) => [fact.fact, fact.status]))
  const answered = new Set<string>()
  const errors: ProblemFieldError[] = []
  answers.forEach(({ fact }, i) => {
    const path = `/facts/${i}/fact`
    const status = statusOf.get(fact)
    if (status === undefined) {
      errors.push({ path, message: 'not a fact of this fan-out' })
    } else if (status !== 'contested') {
      errors.push({
        path,
        message: `this fact is ${status}, not contested; only contested facts are answered`,
      })
    } else if (answered.has(fact)) {
      errors.push({ path, message: 'this fact is answered more than once' })
    }
    answered.add(fact)
  })
  for (const fact of contestedFacts(halted)) {
    if (!answered.has(fact)) {
      errors.push({
        path: '/facts',
        message: `contested fact ${JSON.stringify(fact)} needs an answer (null for "no answer")`,
      })
    }
  }
  return errors
}

function answerPosition(answer: ResolutionAnswer | null): Position | null {
  // Canonical member order, as reconciliation writes positions.
  return answer === null ? null : (JSON.parse(canonicalJson(positionOf(answer))) as Position)
}

/**
 * The content of the HUMAN_RESOLVED manifest that supersedes a HALT: the HALT's coverage and reasons
 * copied, and its facts with each answered one set to `resolved` by rule `human` with the given
 * answer (its contested `reason` cleared: the fact is no longer contested). Throws a RangeError when
 * the manifest is not a HALT or {@link resolutionErrors} has errors; callers check both first.
 */
export function applyResolution(
  halted: HaltedReconciliation,
  answers: readonly FactResolution[],
): HumanResolution {
  if (halted.directive !== 'HALT')
    throw new RangeError(`only a HALT can be resolved, not ${halted.directive}`)
  const errors = resolutionErrors(halted, answers)
  if (errors.length > 0) throw new RangeError(`resolution does not apply: ${errors[0]!.message}`)
  const answerOf = new Map(answers.map((item) => [item.fact, answerPosition(item.answer)]))
  return {
    verdict: 'HUMAN_RESOLVED',
    directive: 'PROCEED',
    final: true,
    coverage: structuredClone(halted.coverage),
    facts: halted.facts.map((fact) => {
      const copy = structuredClone(fact)
      if (!answerOf.has(fact.fact)) return copy
      return { ...copy, status: 'resolved', answer: answerOf.get(fact.fact)!, rule: 'human', reason: null }
    }),
    reasons: structuredClone([...halted.reasons]),
  }
}
