import type { FieldError } from '../shared/field-error.ts'
import { sortedUnique } from '../shared/order.ts'

/**
 * Who a human resolution may name as `action_owner`: an orchestrator the outcome expected or one that interpreted
 * it. Anyone else — a typo, an id no orchestrator holds — would hand the action to nobody while every orchestrator
 * reads that it is not theirs: the stalled pipeline Arbiter exists to prevent.
 */
export function actionOwnerErrors(
  actionOwner: string | undefined,
  outcome: { expected_orchestrators: readonly string[]; interpreting_orchestrators: readonly string[] },
): FieldError[] {
  if (actionOwner === undefined) return []
  if (outcome.expected_orchestrators.includes(actionOwner)) return []
  if (outcome.interpreting_orchestrators.includes(actionOwner)) return []
  const candidates = sortedUnique([...outcome.expected_orchestrators, ...outcome.interpreting_orchestrators])
  return [
    {
      path: '/action_owner',
      message: `must be one of the outcome’s expected or interpreting orchestrators: ${JSON.stringify(candidates)}`,
    },
  ]
}
