/**
 * How large a fan-out's reconciliation manifest can grow, as an upper bound that is a sum: a part for the
 * fan-out itself (its facts, subtasks and policy) and a part for each subtask's latest result. The case keeps
 * the sum, so a new result is judged in constant time — its part, less the part of the result it replaces — and
 * is refused when the bound of the next manifest would pass the manifest limit (docs/limits.md). Nothing here
 * builds a manifest: every term bounds, in canonical JSON bytes, what the manifest can hold because of one input.
 *
 * Why the sum holds whatever the decision (reconcile.ts): a claim's value and qualifiers appear at most in its
 * position, and in one answer or variant; its sources once in its claim entry, and each again as an echo's
 * identity at most; its reference once in its position, once in its claim entry and once per source in echoes.
 * A position is in at most 15 listed pairs (facts with more positions are not compared), and a pair's
 * qualifier differences hold each qualifier of either side at most once; the pairs' own frame is bounded by the
 * number a manifest lists (MAX_LISTED_CONFLICTS), which the fan-out's part carries.
 */

import { MAX_COMPARED_POSITIONS, MAX_LISTED_CONFLICTS, utf8Length } from '../limits.ts'
import { canonicalJson } from '../shared/canonical-json.ts'
import { escapePointerToken } from '../shared/json-pointer.ts'
import type { ClaimSource, Qualifiers } from './claims.ts'
import { sourceIdentity } from './source-identity.ts'

const jcsLength = (value: unknown) => utf8Length(canonicalJson(value))

// Frames: the bytes around the variable parts of each entry, at their longest (ids such as `p5000`, the longest
// enum words, a revision of 100, an RFC 3339 time with milliseconds), each with its separating comma.
/** The manifest's own members outside facts, coverage and policy. */
const MANIFEST_FRAME = 1024
/** A fact entry with every list empty, the longest status, reason and rule, plus its `uncovered_facts` and reason items. */
const FACT_FRAME = 320
/** A subtask's coverage entry, its items in `missing_subtasks` / `late_subtasks`, and its reason item. */
const SUBTASK_FRAME = 320
/** One listed conflict without its qualifier differences. */
const PAIR_FRAME = 128
/** A position entry without its value, date, qualifiers and claim references. */
const POSITION_FRAME = 144
/** A variant without its qualifiers and answer. */
const VARIANT_FRAME = 128
/** A claim entry without its reference, subtask id, confidence and sources. */
const CLAIM_FRAME = 128
/** An echo without its source and claim references. */
const ECHO_FRAME = 32
/** A qualifier difference's frame. */
const QUALIFIER_DIFFERENCE_FRAME = 32
/** A needs_context / blocked / concerns entry's frame. */
const COVERAGE_ITEM_FRAME = 64

/** The part of the bound the fan-out itself makes: everything in the manifest that no result adds. */
export function fanoutManifestBase(fanout: {
  orchestrator_id: string
  fanout_key: string
  facts: readonly string[]
  subtasks: readonly { subtask_id: string }[]
  policy: unknown
  overlaps: unknown
}): number {
  let total = MANIFEST_FRAME + jcsLength(fanout.orchestrator_id) + jcsLength(fanout.fanout_key)
  // The policy is carried once, and its digest.
  total += jcsLength(fanout.policy) + jcsLength(fanout.overlaps)
  for (const fact of fanout.facts) total += FACT_FRAME + 3 * jcsLength(fact)
  for (const subtask of fanout.subtasks) total += SUBTASK_FRAME + 4 * jcsLength(subtask.subtask_id)
  return total + MAX_LISTED_CONFLICTS * PAIR_FRAME
}

/** A claim as the bound reads it. */
export interface BoundClaim {
  fact: string
  value: unknown
  effective_date?: string | null | undefined
  qualifiers?: Qualifiers | undefined
  confidence?: number | null | undefined
  sources: readonly ClaimSource[]
}

/** A result as the bound reads it: the subtask, its claims, and what its coverage entry can carry. */
export interface BoundResult {
  subtask_id: string
  claims: readonly BoundClaim[]
  blocking_question?: string | null | undefined
  blocking_reason?: string | null | undefined
  concerns?: readonly string[] | null | undefined
}

/** What the qualifiers of one position can add to the qualifier differences of one pair it is in. */
function qualifierDifferenceWeight(qualifiers: Qualifiers): number {
  let total = 0
  for (const [key, value] of Object.entries(qualifiers)) {
    total += QUALIFIER_DIFFERENCE_FRAME + jcsLength(`/${escapePointerToken(key)}`) + jcsLength(value)
  }
  return total
}

/**
 * The part of the bound one subtask's result makes. Within one result, what the manifest holds once however
 * many claims repeat it is counted once: a position, a source's identity as an echo, and per fact one answer —
 * or, per qualifier set, one variant (its qualifiers and the largest position with them). Across results it is
 * counted again, which is what keeps the sum an upper bound whatever the other results hold.
 */
export function resultManifestWeight(result: BoundResult): number {
  const subtask = jcsLength(result.subtask_id)
  let total = 0
  if (result.blocking_question) total += COVERAGE_ITEM_FRAME + subtask + jcsLength(result.blocking_question)
  if (result.blocking_reason) total += COVERAGE_ITEM_FRAME + subtask + jcsLength(result.blocking_reason)
  if (result.concerns && result.concerns.length > 0)
    total += COVERAGE_ITEM_FRAME + subtask + jcsLength(result.concerns)

  const positions = new Set<string>()
  const identities = new Set<string>()
  /** Per fact, per qualifier set (its canonical text): the largest position with it. */
  const largest = new Map<string, Map<string, number>>()
  result.claims.forEach((claim, index) => {
    const ref = jcsLength(`${result.subtask_id}#${index}`)
    const qualifiers = claim.qualifiers ?? {}
    const positionText = canonicalJson({
      effective_date: claim.effective_date ?? null,
      qualifiers,
      value: claim.value,
    })
    const position = utf8Length(positionText)
    // Positions and echoes are per fact: the same value claimed of two facts is two positions.
    const positionKey = `${claim.fact}\u0000${positionText}`
    if (!positions.has(positionKey)) {
      positions.add(positionKey)
      total += POSITION_FRAME + position
      // The pairs this position can be in, each holding its qualifiers at most once.
      total += (MAX_COMPARED_POSITIONS - 1) * qualifierDifferenceWeight(qualifiers)
    }
    const qualifiersText = canonicalJson(qualifiers)
    const sets = largest.get(claim.fact) ?? new Map<string, number>()
    largest.set(claim.fact, sets)
    sets.set(qualifiersText, Math.max(sets.get(qualifiersText) ?? 0, position))
    // Its reference in its position's claims, and its entry.
    total += 2 * ref + CLAIM_FRAME + subtask + jcsLength(claim.confidence ?? null) + jcsLength(claim.sources)
    // Each source cited: its reference in an echo, and the echo's source once.
    for (const source of claim.sources) {
      total += ref
      const identity = sourceIdentity(source)
      const identityKey = `${claim.fact}\u0000${identity}`
      if (!identities.has(identityKey)) {
        identities.add(identityKey)
        total += ECHO_FRAME + jcsLength(identity)
      }
    }
  })
  // A fact's answer is one of its positions; under keep_all, each qualifier set's variant holds its qualifiers and
  // one position with them.
  for (const sets of largest.values()) {
    let answer = 0
    let variants = 0
    for (const [qualifiersText, position] of sets) {
      answer = Math.max(answer, position)
      variants += VARIANT_FRAME + utf8Length(qualifiersText) + position
    }
    total += Math.max(answer, variants)
  }
  return total
}
