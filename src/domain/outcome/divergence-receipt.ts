import { hashJson, type Sha256 } from '../shared/canonical-json.ts'
import type { JsonDifference } from '../shared/json-diff.ts'
import { byField, sortedUnique } from '../shared/order.ts'
import { criteriaDivergence } from './criteria-diff.ts'
import type { InterpretationInput } from './interpretation.ts'
import type { DivergenceKind, OutcomeReading } from './vocabulary.ts'

/** The two evidence versions a pair judged, and the items only one of them saw. */
export interface EvidenceDivergence {
  a_evidence_hash: string
  b_evidence_hash: string
  only_in_a: string[]
  only_in_b: string[]
}

/** One pair of orchestrators in a receipt; `a` < `b` by JavaScript's default string order. */
export interface DivergencePair {
  a: string
  b: string
  a_interpretation: OutcomeReading
  b_interpretation: OutcomeReading
  a_criterion_signature: string
  b_criterion_signature: string
  criteria_divergence: JsonDifference[] | null
  evidence_divergence: EvidenceDivergence | null
}

/** A manifest's `interpretation_divergence_receipt`: what the orchestrators disagree about, pair by pair. */
export interface DivergenceReceipt {
  kind: DivergenceKind
  actions_disjoint: boolean
  pairs: DivergencePair[]
  receipt_digest: Sha256
}

export type UnsignedDivergenceReceipt = Omit<DivergenceReceipt, 'receipt_digest'>

/** A pair's `evidence_divergence`: null when both judged the same evidence version. */
export function evidenceDivergence(
  a: InterpretationInput,
  b: InterpretationInput,
): EvidenceDivergence | null {
  if (a.evidence_hash === b.evidence_hash) return null
  const inA = new Set(a.evidence_item_hashes)
  const inB = new Set(b.evidence_item_hashes)
  return {
    a_evidence_hash: a.evidence_hash,
    b_evidence_hash: b.evidence_hash,
    only_in_a: sortedUnique(a.evidence_item_hashes.filter((hash) => !inB.has(hash))),
    only_in_b: sortedUnique(b.evidence_item_hashes.filter((hash) => !inA.has(hash))),
  }
}

/** Builds one receipt pair; the two sides are put in (a, b) order whatever order they are passed in. */
export function buildDivergencePair(x: InterpretationInput, y: InterpretationInput): DivergencePair {
  const [a, b] = x.orchestrator_id <= y.orchestrator_id ? [x, y] : [y, x]
  return {
    a: a.orchestrator_id,
    b: b.orchestrator_id,
    a_interpretation: a.outcome_interpretation,
    b_interpretation: b.outcome_interpretation,
    a_criterion_signature: a.success_criterion_signature,
    b_criterion_signature: b.success_criterion_signature,
    criteria_divergence: criteriaDivergence(a.success_criterion, b.success_criterion),
    evidence_divergence: evidenceDivergence(a, b),
  }
}

/**
 * Every pair (a, b) with a < b for which `include` holds, sorted by (a, b).
 * Sorting the interpretations first makes the nested loop emit pairs already in order.
 */
export function buildDivergencePairs(
  interpretations: readonly InterpretationInput[],
  include: (a: InterpretationInput, b: InterpretationInput) => boolean,
): DivergencePair[] {
  const sorted = [...interpretations].sort(compareByOrchestrator)
  const pairs: DivergencePair[] = []
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length; j++) {
      const a = sorted[i]!
      const b = sorted[j]!
      if (include(a, b)) pairs.push(buildDivergencePair(a, b))
    }
  }
  return pairs
}

/**
 * `criteria` if any listed pair's criteria signatures differ, else `evidence_seen` if any judged different
 * evidence versions, else `interpretation`.
 */
export function classifyDivergence(pairs: readonly DivergencePair[]): DivergenceKind {
  if (pairs.some((pair) => pair.a_criterion_signature !== pair.b_criterion_signature)) return 'criteria'
  if (pairs.some((pair) => pair.evidence_divergence !== null)) return 'evidence_seen'
  return 'interpretation'
}

/**
 * Resolution rule 3 (docs/decision-procedures.md): for every pair of orchestrators whose interpretations
 * differ, both declared an `intended_action` and their `resources` do not intersect.
 * An undeclared action is never disjoint: Arbiter cannot know what it would touch.
 * Two declared actions with empty `resources` touch nothing and so are disjoint.
 * With no differing pair the test is vacuously true; `decide` only asks it when
 * there is a disagreement.
 */
export function actionsDisjoint(interpretations: readonly InterpretationInput[]): boolean {
  for (let i = 0; i < interpretations.length; i++) {
    for (let j = i + 1; j < interpretations.length; j++) {
      const a = interpretations[i]!
      const b = interpretations[j]!
      if (a.outcome_interpretation === b.outcome_interpretation) continue
      if (a.intended_action === null || b.intended_action === null) return false
      const touchedByA = new Set(a.intended_action.resources)
      if (b.intended_action.resources.some((resource) => touchedByA.has(resource))) return false
    }
  }
  return true
}

/** `receipt_digest = sha256(JCS(receipt without receipt_digest))`. */
export function receiptDigest(receipt: UnsignedDivergenceReceipt): Sha256 {
  const { kind, actions_disjoint, pairs } = receipt
  return hashJson({ kind, actions_disjoint, pairs })
}

/** Assembles a receipt and seals it with its digest. */
export function buildDivergenceReceipt(
  kind: DivergenceKind,
  actions_disjoint: boolean,
  pairs: DivergencePair[],
): DivergenceReceipt {
  const unsigned: UnsignedDivergenceReceipt = { kind, actions_disjoint, pairs }
  return { ...unsigned, receipt_digest: receiptDigest(unsigned) }
}

/** True when the receipt's digest matches its content (e.g. after a round trip through storage). */
export function verifyReceiptDigest(receipt: DivergenceReceipt): boolean {
  const { receipt_digest, ...unsigned } = receipt
  return receiptDigest(unsigned) === receipt_digest
}

/** Orchestrator ids in UTF-16 code-unit order: the order of every list in a manifest. */
export const compareByOrchestrator = byField('orchestrator_id')
