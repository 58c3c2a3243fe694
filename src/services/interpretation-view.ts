import type { InterpretationRow } from '../db/repositories/interpretations.ts'

/** An interpretation as manifests and outcomes show it (SPEC §3 Manifests, `interpretations[]`). */
export function toInterpretationView(row: InterpretationRow) {
  return {
    orchestrator_id: row.orchestrator_id,
    success_criterion_signature: row.success_criterion_signature,
    outcome_interpretation: row.outcome_interpretation,
    evidence_hash: row.evidence_hash,
    intended_action: row.intended_action,
    revision: row.revision,
    received_at: row.received_at.toISOString(),
  }
}

export type InterpretationView = ReturnType<typeof toInterpretationView>
