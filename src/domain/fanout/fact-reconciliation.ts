/*
 * One fact reconciled from every claim made about it: its positions, the answer the fan-out's policy chooses among
 * them (per qualifier set under `keep_all`), its claims, conflicts and echoes.
 */

import { MAX_COMPARED_POSITIONS } from '../limits.ts'
import { compareCodeUnits, sortedUnique } from '../shared/order.ts'
import { choosePosition } from './policy-rules.ts'
import {
  conflictsAmong,
  echoesAmong,
  groupIntoPositions,
  type LocatedClaim,
  type WorkingPosition,
} from './positions.ts'
import type { FactEntry, Position, Variant } from './reconciliation.ts'
import { clusterClaimsBySource, countClusters } from './source-clusters.ts'
import type { ContestedReason, FanoutPolicy, PolicyRule } from './vocabulary.ts'

interface GroupOutcome {
  status: 'agreed' | 'resolved' | 'contested'
  winner: WorkingPosition | null
  rule: PolicyRule | null
  reason: ContestedReason | null
}

/**
 * Reconciles positions that share their qualifiers: one position is agreed; otherwise the policy's
 * rules choose, and the losers are marked with the deciding rule. An answer resting on fewer
 * independent sources than the policy asks for is withdrawn, and with it every `lost_by`: nothing
 * was decided against positions that only lost to an answer that does not stand.
 */
function reconcileGroup(positions: readonly WorkingPosition[], policy: FanoutPolicy): GroupOutcome {
  let outcome: GroupOutcome
  if (positions.length === 1) {
    outcome = { status: 'agreed', winner: positions[0]!, rule: null, reason: null }
  } else {
    const choice = choosePosition(positions, policy.resolve, policy.source_priority)
    if (choice === null) return { status: 'contested', winner: null, rule: null, reason: 'no_rule_decides' }
    for (const position of positions) if (position !== choice.winner) position.lost_by = choice.rule
    outcome = { status: 'resolved', winner: choice.winner, rule: choice.rule, reason: null }
  }
  if (outcome.winner!.independent_sources < policy.min_independent_sources) {
    for (const position of positions) position.lost_by = null
    return { status: 'contested', winner: null, rule: null, reason: 'insufficient_corroboration' }
  }
  return outcome
}

function answerOf(position: WorkingPosition | null): Position | null {
  if (position === null) return null
  return { value: position.value, effective_date: position.effective_date, qualifiers: position.qualifiers }
}

type FactVerdict = Pick<FactEntry, 'status' | 'answer' | 'variants' | 'rule' | 'reason'>

function decideFact(positions: readonly WorkingPosition[], policy: FanoutPolicy): FactVerdict {
  const bySet = new Map<string, WorkingPosition[]>()
  for (const position of positions) {
    const set = bySet.get(position.qualifiersText)
    if (set === undefined) bySet.set(position.qualifiersText, [position])
    else set.push(position)
  }

  if (bySet.size === 1) {
    const outcome = reconcileGroup(positions, policy)
    return {
      status: outcome.status,
      answer: answerOf(outcome.winner),
      variants: [],
      rule: outcome.rule,
      reason: outcome.reason,
    }
  }
  if (policy.on_qualifier_difference === 'halt') {
    return { status: 'contested', answer: null, variants: [], rule: null, reason: 'qualifier_difference' }
  }
  // keep_all: statements about different populations can all be true, so each qualifier set
  // gets its own answer instead of competing with the others.
  const variants: Variant[] = [...bySet.keys()].sort(compareCodeUnits).map((text) => {
    const group = bySet.get(text)!
    const outcome = reconcileGroup(group, policy)
    return {
      qualifiers: group[0]!.qualifiers,
      status: outcome.status,
      answer: answerOf(outcome.winner),
      rule: outcome.rule,
      reason: outcome.reason,
    }
  })
  const firstContested = variants.find((variant) => variant.status === 'contested')
  return {
    status: firstContested ? 'contested' : 'scoped',
    answer: null,
    variants,
    rule: null,
    reason: firstContested ? firstContested.reason : null,
  }
}

/** Too many positions to compare, or more pairs than the manifest has left: contested before any rule. */
function tooManyPositions(): FactVerdict {
  return { status: 'contested', answer: null, variants: [], rule: null, reason: 'too_many_positions' }
}

/** Pairs the manifest may still list, handed out to facts in fact order. */
export interface PairBudget {
  left: number
}

/**
 * Whether the fact's positions are compared: no more than MAX_COMPARED_POSITIONS of them, and their pairs
 * within what the manifest has left (taken from it when they are).
 */
function takePairs(positionCount: number, budget: PairBudget): boolean {
  if (positionCount > MAX_COMPARED_POSITIONS) return false
  const pairs = (positionCount * (positionCount - 1)) / 2
  if (pairs > budget.left) return false
  budget.left -= pairs
  return true
}

/** Reconciles one fact from every claim made about it. */
export function reconcileFact(
  fact: string,
  claims: readonly LocatedClaim[],
  policy: FanoutPolicy,
  budget: PairBudget,
): FactEntry {
  if (claims.length === 0) {
    return {
      fact,
      status: 'unclaimed',
      answer: null,
      variants: [],
      rule: null,
      reason: null,
      positions: [],
      claims: [],
      conflicts: [],
      echoes: [],
    }
  }
  const positions = groupIntoPositions(claims)
  // Clusters span every claim of the fact: a claim of another position can join two sources.
  const { clusterOf, citations } = clusterClaimsBySource(claims.map((located) => located.claim))
  for (const position of positions)
    position.independent_sources = countClusters(clusterOf, position.claimIndices)
  const positionIdOf = new Array<string>(claims.length)
  for (const position of positions)
    for (const index of position.claimIndices) positionIdOf[index] = position.id

  const compared = takePairs(positions.length, budget)
  const verdict = compared ? decideFact(positions, policy) : tooManyPositions()
  return {
    fact,
    ...verdict,
    positions: positions.map((position) => ({
      position_id: position.id,
      value: position.value,
      effective_date: position.effective_date,
      qualifiers: position.qualifiers,
      claims: sortedUnique(position.claimIndices.map((index) => claims[index]!.ref)),
      independent_sources: position.independent_sources,
      lost_by: position.lost_by,
    })),
    claims: claims
      .map((located, index) => ({
        claim_ref: located.ref,
        subtask_id: located.subtask_id,
        revision: located.revision,
        position_id: positionIdOf[index]!,
        confidence: located.claim.confidence ?? null,
        sources: located.claim.sources.map((source) => ({ ...source })),
        out_of_scope: located.out_of_scope,
      }))
      .sort((x, y) => compareCodeUnits(x.claim_ref, y.claim_ref)),
    conflicts: compared ? conflictsAmong(positions) : [],
    echoes: echoesAmong(claims, citations),
  }
}
