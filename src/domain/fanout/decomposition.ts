/**
 * The check a fan-out's decomposition gets when it is created. Reconciliation can only be as good
 * as the set of subtasks it is given: a fact no subtask owns will never be answered, and a fact two
 * subtasks own gets researched twice from different starting points and comes back as a disagreement
 * the orchestrator manufactured itself.
 */
import type { ProblemFieldError } from '../../errors.ts'
import { sortedUnique } from '../shared/order.ts'

/** What the check needs of a subtask: who it is and which facts it owns. */
export interface SubtaskOwnership {
  subtask_id: string
  facts: readonly string[]
}

/** A fact owned by two or more subtasks; `subtasks` sorted. */
export interface Overlap {
  fact: string
  subtasks: string[]
}

export interface DecompositionReport {
  /** Facts no subtask owns, sorted. */
  uncovered_facts: string[]
  /** Facts owned by ≥ 2 subtasks, sorted by fact. */
  overlaps: Overlap[]
}

/** Each fact's owners, in subtask order (a subtask listing a fact twice owns it once). */
function ownersByFact(subtasks: readonly SubtaskOwnership[]): Map<string, string[]> {
  const owners = new Map<string, string[]>()
  for (const subtask of subtasks) {
    for (const fact of new Set(subtask.facts)) {
      const list = owners.get(fact)
      if (list === undefined) owners.set(fact, [subtask.subtask_id])
      else list.push(subtask.subtask_id)
    }
  }
  return owners
}

/** Unowned facts and overlaps, in the orders manifests print them; never depends on input order. */
export function checkDecomposition(
  facts: readonly string[],
  subtasks: readonly SubtaskOwnership[],
): DecompositionReport {
  const owners = ownersByFact(subtasks)
  const uncovered_facts = sortedUnique(facts.filter((fact) => !owners.has(fact)))
  const overlaps = sortedUnique([...owners.keys()].filter((fact) => new Set(owners.get(fact)).size > 1)).map(
    (fact) => ({ fact, subtasks: sortedUnique(owners.get(fact)!) }),
  )
  return { uncovered_facts, overlaps }
}

/**
 * The field errors a `strict` decomposition is refused with (empty when it passes): one at
 * `/facts/<i>` per fact no subtask owns, and one at `/subtasks/<i>/facts/<j>` per owner of each
 * overlapping fact, each naming the other owners. Paths are JSON pointers into the creation body,
 * listed in body order (facts first).
 */
export function strictDecompositionErrors(
  facts: readonly string[],
  subtasks: readonly SubtaskOwnership[],
): ProblemFieldError[] {
  const owners = ownersByFact(subtasks)
  const errors: ProblemFieldError[] = []
  facts.forEach((fact, i) => {
    if (!owners.has(fact)) errors.push({ path: `/facts/${i}`, message: 'no subtask owns this fact' })
  })
  subtasks.forEach((subtask, i) => {
    const reported = new Set<string>()
    subtask.facts.forEach((fact, j) => {
      const others = sortedUnique(owners.get(fact) ?? []).filter((id) => id !== subtask.subtask_id)
      if (others.length === 0 || reported.has(fact)) return
      reported.add(fact)
      errors.push({
        path: `/subtasks/${i}/facts/${j}`,
        message: `fact ${JSON.stringify(fact)} is also owned by ${others.map((id) => JSON.stringify(id)).join(', ')}`,
      })
    })
  })
  return errors
}
