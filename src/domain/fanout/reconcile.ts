/**
 * Reconciliation of a fan-out as a pure function: the fan-out's facts, subtasks and policy plus the
 * latest result of each subtask in, the content of a reconciliation manifest out (or "still
 * waiting"). No clock, no database: the caller says whether the deadline has passed and whether the
 * owner closed the fan-out, and signs what comes back. docs/fanouts.md walks through an example.
 *
 * Nothing here depends on the order results arrived in or the order of claims within a result:
 * every list is sorted by a key derived from its content before it is returned.
 *
 * Cost, for n claims of one fact forming P distinct positions and citing S sources: grouping into
 * positions is one canonical serialisation and one map lookup per claim, O(n) plus an O(P log P)
 * sort; echo clusters are one union–find pass, O(S·α(S)); each policy rule reads every claim of the
 * tied positions once. The pairwise `conflicts` list, P·(P−1)/2 entries, would be the one quadratic
 * part, so it is bounded: a fact with more than MAX_COMPARED_POSITIONS distinct positions is not
 * compared at all, and a manifest lists at most MAX_LISTED_CONFLICTS pairs, handed out to facts in
 * fact order; a fact over either bound is `contested` with reason `too_many_positions`, no rule
 * tried, its positions and claims listed and its `conflicts` empty. A thousand claims repeating two
 * positions still make one conflict.
 */

import { MAX_LISTED_CONFLICTS } from '../limits.ts'
import { sortedUnique } from '../shared/order.ts'
import type { ReconcileInput, SubtaskResult } from './claims.ts'
import { buildCoverage, buildReasons, bySubtaskId, decideOutcome } from './coverage.ts'
import { type PairBudget, reconcileFact } from './fact-reconciliation.ts'
import type { LocatedClaim } from './positions.ts'
import type { Reconciliation } from './reconciliation.ts'

/**
 * Refuses inputs the caller promised never to send; choosing silently would make the result depend
 * on input order, or count a claim the fan-out never asked about.
 */
function assertConsistent(input: ReconcileInput): void {
  const subtasks = new Set(input.fanout.subtasks.map((subtask) => subtask.subtask_id))
  const facts = new Set(input.fanout.facts)
  const seen = new Set<string>()
  for (const result of input.results) {
    if (!subtasks.has(result.subtask_id)) {
      throw new RangeError(`result for unknown subtask ${JSON.stringify(result.subtask_id)}`)
    }
    if (seen.has(result.subtask_id)) {
      throw new RangeError(`two results for subtask ${JSON.stringify(result.subtask_id)}`)
    }
    seen.add(result.subtask_id)
    for (const claim of result.claims) {
      if (!facts.has(claim.fact))
        throw new RangeError(`claim about unknown fact ${JSON.stringify(claim.fact)}`)
    }
  }
}

function claimsByFact(input: ReconcileInput, results: readonly SubtaskResult[]): Map<string, LocatedClaim[]> {
  const owned = new Map(input.fanout.subtasks.map((subtask) => [subtask.subtask_id, new Set(subtask.facts)]))
  const byFact = new Map<string, LocatedClaim[]>(input.fanout.facts.map((fact) => [fact, []]))
  for (const result of results) {
    result.claims.forEach((claim, index) => {
      byFact.get(claim.fact)!.push({
        ref: `${result.subtask_id}#${index}`,
        subtask_id: result.subtask_id,
        revision: result.revision,
        out_of_scope: !owned.get(result.subtask_id)!.has(claim.fact),
        claim,
      })
    })
  }
  return byFact
}

/**
 * Reconciles a fan-out. Pending — `{kind: 'pending', missing_subtasks}` — while a subtask has not
 * returned, unless the deadline has passed or the owner closed the fan-out (with no deadline, only
 * closing stops the wait). Otherwise the manifest's decided content: every fact, in fact order, with
 * its positions, claims, conflicts (within the bounds above) and echoes; the coverage of the subtasks; the reasons; and the
 * verdict and directive they lead to.
 *
 * Throws a RangeError for a result of an unknown subtask, two results of one subtask, or a claim
 * about a fact the fan-out does not list: the caller refuses those before they are stored.
 */
export function reconcile(input: ReconcileInput): Reconciliation {
  assertConsistent(input)
  const results = bySubtaskId([...input.results])
  const returned = new Set(results.map((result) => result.subtask_id))
  const missing = sortedUnique(input.fanout.subtasks.map((subtask) => subtask.subtask_id)).filter(
    (id) => !returned.has(id),
  )
  if (missing.length > 0 && !input.deadline_passed && !input.closed) {
    return { kind: 'pending', missing_subtasks: missing }
  }

  const policy = input.fanout.policy
  const claims = claimsByFact(input, results)
  const budget: PairBudget = { left: MAX_LISTED_CONFLICTS }
  const facts = sortedUnique(input.fanout.facts).map((fact) =>
    reconcileFact(fact, claims.get(fact)!, policy, budget),
  )
  const coverage = buildCoverage(input, results, missing, facts)
  const reasons = buildReasons(coverage, facts)
  return { kind: 'decided', ...decideOutcome(policy, coverage, facts), coverage, facts, reasons }
}
