import type { JsonValue } from '../../domain/canonical-json.ts'
import type { IntendedAction, OutcomeReading } from '../../domain/decision.ts'
import type { Queryable } from '../pool.ts'

/**
 * interpretations: every revision an orchestrator submitted for an outcome.
 * id; outcome_id; orchestrator_id; revision (1, 2, …); has_criterion + success_criterion (the document, when
 * one was given rather than a hash); success_criterion_signature; outcome_interpretation; evidence_hash (the
 * version judged); intended_action; rationale; received_at; api_key_id (who submitted it).
 */
export interface InterpretationRow {
  id: string
  outcome_id: string
  orchestrator_id: string
  revision: number
  has_criterion: boolean
  success_criterion: JsonValue | null
  success_criterion_signature: string
  outcome_interpretation: OutcomeReading
  evidence_hash: string
  intended_action: IntendedAction | null
  rationale: string | null
  received_at: Date
  api_key_id: string | null
}

const COLUMNS = `id, outcome_id, orchestrator_id, revision, has_criterion, success_criterion,
  success_criterion_signature, outcome_interpretation, evidence_hash, intended_action, rationale, received_at,
  api_key_id`

export async function insertInterpretation(db: Queryable, row: InterpretationRow): Promise<void> {
  await db.query(
    `INSERT INTO interpretations (${COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10::jsonb, $11, $12, $13)`,
    [
      row.id,
      row.outcome_id,
      row.orchestrator_id,
      row.revision,
      row.has_criterion,
      row.has_criterion ? JSON.stringify(row.success_criterion) : null,
      row.success_criterion_signature,
      row.outcome_interpretation,
      row.evidence_hash,
      row.intended_action === null ? null : JSON.stringify(row.intended_action),
      row.rationale,
      row.received_at,
      row.api_key_id,
    ],
  )
}

/** The latest revision of each orchestrator, for each of the given outcomes. */
export async function latestInterpretations(
  db: Queryable,
  outcomeIds: string[],
): Promise<InterpretationRow[]> {
  const { rows } = await db.query<InterpretationRow>(
    `SELECT DISTINCT ON (outcome_id, orchestrator_id) ${COLUMNS}
     FROM interpretations WHERE outcome_id = ANY($1::uuid[])
     ORDER BY outcome_id, orchestrator_id, revision DESC`,
    [outcomeIds],
  )
  return rows
}

export async function latestInterpretationOf(db: Queryable, outcomeId: string, orchestratorId: string) {
  const { rows } = await db.query<InterpretationRow>(
    `SELECT ${COLUMNS} FROM interpretations WHERE outcome_id = $1 AND orchestrator_id = $2
     ORDER BY revision DESC LIMIT 1`,
    [outcomeId, orchestratorId],
  )
  return rows[0]
}

export async function insertDissent(
  db: Queryable,
  dissent: {
    id: string
    outcome_id: string
    orchestrator_id: string
    manifest_id: string
    submission: JsonValue
    received_at: Date
    api_key_id: string
  },
): Promise<void> {
  await db.query(
    `INSERT INTO dissents (id, outcome_id, orchestrator_id, manifest_id, submission, received_at, api_key_id)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)`,
    [
      dissent.id,
      dissent.outcome_id,
      dissent.orchestrator_id,
      dissent.manifest_id,
      JSON.stringify(dissent.submission),
      dissent.received_at,
      dissent.api_key_id,
    ],
  )
}
