import type { JsonValue } from '../shared/canonical-json.ts'
import type { IntendedActionKind, OutcomeReading } from './vocabulary.ts'

export type IntendedAction = {
  kind: IntendedActionKind
  /** What the action touches; the disjoint-actions rule compares these sets. */
  resources: string[]
}

/** An orchestrator's latest interpretation, with the evidence version it judged. */
export interface InterpretationInput {
  orchestrator_id: string
  /** `sha256(JCS(success_criterion))`, or the opaque `success_criterion_hash` submitted. */
  success_criterion_signature: string
  /** The criterion document when known; undefined when only a hash was submitted. */
  success_criterion: JsonValue | undefined
  outcome_interpretation: OutcomeReading
  /** The evidence version this orchestrator judged. */
  evidence_hash: string
  /** The item hashes of that evidence version. */
  evidence_item_hashes: string[]
  intended_action: IntendedAction | null
  revision: number
  /** RFC 3339 time this latest revision was received. */
  received_at: string
}

/** An interpretation as a manifest (and an outcome) shows it: no criterion document, no evidence items. */
export interface ManifestInterpretation {
  orchestrator_id: string
  success_criterion_signature: string
  outcome_interpretation: OutcomeReading
  evidence_hash: string
  intended_action: IntendedAction | null
  revision: number
  received_at: string
}

export function toManifestInterpretation(interpretation: ManifestInterpretation): ManifestInterpretation {
  return {
    orchestrator_id: interpretation.orchestrator_id,
    success_criterion_signature: interpretation.success_criterion_signature,
    outcome_interpretation: interpretation.outcome_interpretation,
    evidence_hash: interpretation.evidence_hash,
    intended_action: interpretation.intended_action,
    revision: interpretation.revision,
    received_at: interpretation.received_at,
  }
}
