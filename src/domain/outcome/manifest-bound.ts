/**
 * How large an outcome's next manifest can grow, as an upper bound computed from the latest interpretation of
 * each orchestrator and the outcome's own fields; an interpretation that would take it past the manifest limit is
 * refused when it arrives (docs/limits.md). Nothing here decides: every pair of interpreting orchestrators is
 * counted as if its receipt listed it, with the largest difference its criteria and evidence versions allow.
 *
 * Why each term holds (divergence-receipt.ts, json-diff.ts):
 * - A criteria divergence lists disjoint points of the two documents, each with the values on either side: the
 *   values are at most both documents' canonical texts, and the pointers at most those of every leaf of either
 *   document (a point of difference is a leaf, or an ancestor whose pointer is shorter). Equal signatures, or a
 *   side known only by its hash, list nothing.
 * - An evidence divergence lists the item hashes one version has and the other has not. Every version is the
 *   previous one with items added (evidence is only ever appended), so two versions differ by exactly the
 *   difference of their sizes.
 */

import { jcsLength } from '../limits.ts'
import type { JsonValue } from '../shared/canonical-json.ts'
import { escapePointerToken } from '../shared/json-pointer.ts'

/** The frames, in bytes: what an entry takes around its variable parts. */
const FRAME = {
  /** Kind, ids, times, hashes, verdict, directive, readings, action owner's frame, supersedes, resolution null. */
  manifest: 1536,
  /** An interpretation entry without its orchestrator id and intended action. */
  interpretation: 320,
  /** A receipt pair without its ids and divergences. */
  pair: 400,
  /** An evidence divergence without its item hashes. */
  evidenceDivergence: 256,
  /** A criteria divergence's point without its pointer and values. */
  difference: 32,
  /** The receipt's own members. */
  receipt: 256,
  /**
   * A ground-truth record without its request URL: the URL is the probe's template filled with the outcome's
   * parameters (percent-encoded, three bytes a byte at most), and an error's detail may quote it once.
   */
  groundTruth: 16 * 1024,
} as const

/** One item hash in `only_in_a` / `only_in_b`. */
const ITEM_HASH = 74

/**
 * What a criterion document can add to one pair's criteria divergence: its canonical text, and for each leaf
 * (a scalar, an empty array or object) its pointer and a point's frame.
 */
export function criterionDiffWeight(criterion: JsonValue): number {
  let leaves = 0
  const walk = (value: JsonValue, pointer: string) => {
    if (Array.isArray(value)) {
      if (value.length === 0) leaves += jcsLength(pointer) + FRAME.difference
      for (let index = 0; index < value.length; index++) walk(value[index]!, `${pointer}/${index}`)
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value)
      if (entries.length === 0) leaves += jcsLength(pointer) + FRAME.difference
      for (const [key, item] of entries) walk(item, `${pointer}/${escapePointerToken(key)}`)
    } else leaves += jcsLength(pointer) + FRAME.difference
  }
  walk(criterion, '')
  return jcsLength(criterion) + leaves
}

/** An orchestrator's latest interpretation as the bound reads it. */
export interface BoundInterpretation {
  orchestrator_id: string
  success_criterion_signature: string
  /** The document, or undefined when only its hash was given. */
  success_criterion: JsonValue | undefined
  intended_action: JsonValue | null
  /** Items in the evidence version it judged. */
  evidence_items: number
  evidence_hash: string
}

/** The outcome's own part: what its manifest holds whoever interprets it. */
export interface BoundOutcome {
  subagent_id: string
  run_id: string
  expected_orchestrators: readonly string[]
  /** The probe's parameters, when a probe is attached (null without one). */
  probe_params: JsonValue | null
}

export function outcomeManifestBound(
  outcome: BoundOutcome,
  interpretations: readonly BoundInterpretation[],
): number {
  const ids = [...outcome.expected_orchestrators, ...interpretations.map((i) => i.orchestrator_id)]
  const longestId = Math.max(0, ...ids.map((id) => jcsLength(id)))
  let total =
    FRAME.manifest + FRAME.receipt + jcsLength(outcome.subagent_id) + jcsLength(outcome.run_id) + longestId
  for (const id of outcome.expected_orchestrators) total += jcsLength(id) + 1
  if (outcome.probe_params !== null) {
    total +=
      FRAME.groundTruth +
      6 * (jcsLength(outcome.probe_params) + jcsLength(outcome.subagent_id) + jcsLength(outcome.run_id))
  }
  const weights = interpretations.map((interpretation) => ({
    interpretation,
    id: jcsLength(interpretation.orchestrator_id),
    criterion:
      interpretation.success_criterion === undefined
        ? 0
        : criterionDiffWeight(interpretation.success_criterion),
  }))
  for (const { interpretation, id } of weights) {
    total += FRAME.interpretation + id + jcsLength(interpretation.intended_action)
  }
  for (let i = 0; i < weights.length; i++) {
    for (let j = i + 1; j < weights.length; j++) {
      const a = weights[i]!
      const b = weights[j]!
      total += FRAME.pair + a.id + b.id
      const bothDocuments = a.criterion > 0 && b.criterion > 0
      if (
        bothDocuments &&
        a.interpretation.success_criterion_signature !== b.interpretation.success_criterion_signature
      )
        total += a.criterion + b.criterion
      if (a.interpretation.evidence_hash !== b.interpretation.evidence_hash) {
        total +=
          FRAME.evidenceDivergence +
          ITEM_HASH * Math.abs(a.interpretation.evidence_items - b.interpretation.evidence_items)
      }
    }
  }
  return total
}

/**
 * What an outcome keeps so that an orchestrator's first interpretation can be judged in the one statement that
 * writes it: the bound over the interpretations so far, how many orchestrators interpret it (and how many of
 * them it did not expect), and the longest id and largest criterion weight among them.
 */
export interface OutcomeBoundState {
  manifest_bound: number
  interpreting: number
  unexpected_orchestrators: number
  longest_orchestrator_id: number
  largest_criterion: number
}

export function outcomeBoundState(
  outcome: BoundOutcome,
  interpretations: readonly BoundInterpretation[],
): OutcomeBoundState {
  const expected = new Set(outcome.expected_orchestrators)
  return {
    manifest_bound: outcomeManifestBound(outcome, interpretations),
    interpreting: interpretations.length,
    unexpected_orchestrators: interpretations.filter((i) => !expected.has(i.orchestrator_id)).length,
    longest_orchestrator_id: Math.max(0, ...interpretations.map((i) => jcsLength(i.orchestrator_id))),
    largest_criterion: Math.max(
      0,
      ...interpretations.map((i) =>
        i.success_criterion === undefined ? 0 : criterionDiffWeight(i.success_criterion),
      ),
    ),
  }
}

/**
 * How much one more orchestrator's first interpretation can add to the bound, given the state kept: its own
 * entry (and its id as the longest), and for each of the `interpreting` orchestrators already there one pair of
 * at most both ids, both criteria and every current evidence item:
 * `own + interpreting × (perPair + longest_orchestrator_id + largest_criterion + perItem × evidence_items)`.
 */
export interface FirstInterpretationGrowth {
  own: number
  perPair: number
  perItem: number
  idBytes: number
  criterionWeight: number
}

export function firstInterpretationGrowth(interpretation: {
  orchestrator_id: string
  success_criterion: JsonValue | undefined
  intended_action: JsonValue | null
}): FirstInterpretationGrowth {
  const id = jcsLength(interpretation.orchestrator_id)
  const criterion =
    interpretation.success_criterion === undefined ? 0 : criterionDiffWeight(interpretation.success_criterion)
  return {
    own: FRAME.interpretation + 2 * id + jcsLength(interpretation.intended_action),
    perPair: FRAME.pair + FRAME.evidenceDivergence + id + criterion,
    perItem: ITEM_HASH,
    idBytes: id,
    criterionWeight: criterion,
  }
}

/** The state after a first interpretation, as the one-statement path computes it. */
export function grownBoundState(
  state: OutcomeBoundState,
  growth: FirstInterpretationGrowth,
  evidenceItems: number,
  expected: boolean,
): OutcomeBoundState {
  return {
    manifest_bound:
      state.manifest_bound +
      growth.own +
      state.interpreting *
        (growth.perPair +
          state.longest_orchestrator_id +
          state.largest_criterion +
          growth.perItem * evidenceItems),
    interpreting: state.interpreting + 1,
    unexpected_orchestrators: state.unexpected_orchestrators + (expected ? 0 : 1),
    longest_orchestrator_id: Math.max(state.longest_orchestrator_id, growth.idBytes),
    largest_criterion: Math.max(state.largest_criterion, growth.criterionWeight),
  }
}
