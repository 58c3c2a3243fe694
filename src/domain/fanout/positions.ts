/*
 * A fact's claims as positions: JCS-equal claims are one position; every pair of positions is a conflict, and a
 * source cited by claims of two or more subtasks an echo.
 */

import { canonicalJson, type JsonValue } from '../shared/canonical-json.ts'
import { diffJson } from '../shared/json-diff.ts'
import { compareCodeUnits, sortedUnique } from '../shared/order.ts'
import type { Qualifiers, SubmittedClaim } from './claims.ts'
import type { Conflict, Echo, Position, PositionField } from './reconciliation.ts'
import type { PolicyRule } from './vocabulary.ts'

/** A claim's (or an answer's) position, with the absent members filled in. */
export function positionOf(claim: {
  value: JsonValue
  effective_date?: string | null | undefined
  qualifiers?: Qualifiers | undefined
}): Position {
  return {
    value: claim.value,
    effective_date: claim.effective_date ?? null,
    qualifiers: claim.qualifiers ?? {},
  }
}

/** A claim of one fact, with where it came from. */
export interface LocatedClaim {
  ref: string
  subtask_id: string
  revision: number
  out_of_scope: boolean
  claim: SubmittedClaim
}

/** A position while it is being reconciled. */
export interface WorkingPosition extends Position {
  id: string
  /** Canonical text of each compared part, so conflicts compare strings. */
  valueText: string
  qualifiersText: string
  claimIndices: number[]
  claims: SubmittedClaim[]
  independent_sources: number
  lost_by: PolicyRule | null
}

/** The claims' distinct positions (JCS-equal ones are one), numbered in the order of their canonical text. */
export function groupIntoPositions(claims: readonly LocatedClaim[]): WorkingPosition[] {
  const byText = new Map<string, { position: Position; claimIndices: number[] }>()
  claims.forEach((located, index) => {
    const text = canonicalJson(positionOf(located.claim))
    const group = byText.get(text)
    // Read back from the canonical text, so that which of several JCS-equal spellings arrived
    // first does not even decide the key order the manifest is written with.
    if (group === undefined)
      byText.set(text, { position: JSON.parse(text) as Position, claimIndices: [index] })
    else group.claimIndices.push(index)
  })
  return [...byText.keys()].sort(compareCodeUnits).map((text, i) => {
    const { position, claimIndices } = byText.get(text)!
    return {
      ...position,
      id: `p${i + 1}`,
      valueText: canonicalJson(position.value),
      qualifiersText: canonicalJson(position.qualifiers),
      claimIndices,
      claims: claimIndices.map((index) => claims[index]!.claim),
      independent_sources: 0,
      lost_by: null,
    }
  })
}

function conflictBetween(a: WorkingPosition, b: WorkingPosition): Conflict {
  const differs: PositionField[] = []
  if (a.effective_date !== b.effective_date) differs.push('effective_date')
  const qualifiersDiffer = a.qualifiersText !== b.qualifiersText
  if (qualifiersDiffer) differs.push('qualifiers')
  if (a.valueText !== b.valueText) differs.push('value')
  return {
    a: a.id,
    b: b.id,
    differs,
    qualifier_differences: qualifiersDiffer ? diffJson(a.qualifiers, b.qualifiers) : [],
  }
}

/** Every pair of positions, lower number first: the one quadratic step, bounded (src/domain/fanout/reconcile.ts). */
export function conflictsAmong(positions: readonly WorkingPosition[]): Conflict[] {
  const conflicts: Conflict[] = []
  for (let i = 0; i < positions.length; i++) {
    for (let j = i + 1; j < positions.length; j++)
      conflicts.push(conflictBetween(positions[i]!, positions[j]!))
  }
  return conflicts
}

/** The sources cited by claims of two or more subtasks (`citations`: each source's claims). */
export function echoesAmong(claims: readonly LocatedClaim[], citations: Map<string, number[]>): Echo[] {
  const echoes: Echo[] = []
  for (const [source, indices] of citations) {
    const subtasks = new Set(indices.map((index) => claims[index]!.subtask_id))
    if (subtasks.size >= 2) echoes.push({ source, claims: sortedUnique(indices.map((i) => claims[i]!.ref)) })
  }
  return echoes.sort((x, y) => compareCodeUnits(x.source, y.source))
}
