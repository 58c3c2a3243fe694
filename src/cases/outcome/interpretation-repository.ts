import { type AuditData, auditAppendFrom } from '../../audit-log/append.ts'
import { isoText } from '../../db/iso-text.ts'
import { named, type Statement, statement } from '../../db/statement.ts'
import type { IntendedAction } from '../../domain/outcome/interpretation.ts'
import type { FirstInterpretationGrowth } from '../../domain/outcome/manifest-bound.ts'
import type { OutcomeReading } from '../../domain/outcome/vocabulary.ts'
import type { JsonValue } from '../../domain/shared/canonical-json.ts'
import type { AuditKind } from '../../domain/vocabulary.ts'
import { OUTCOME_COLUMNS, type OutcomeRow } from './repository.ts'

/*
 * The orchestrators' interpretations of an outcome, the dissents that arrive after its final decision, and what
 * its decision and the bound on its next manifest read of them.
 */

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

const INTERPRETATION_COLUMNS = `id, outcome_id, orchestrator_id, revision, has_criterion, success_criterion,
  success_criterion_signature, outcome_interpretation, evidence_hash, intended_action, rationale, received_at,
  api_key_id`
/** The same columns of `interpretations i`. */
const I_INTERPRETATION_COLUMNS = INTERPRETATION_COLUMNS.replace(/\w+/g, 'i.$&')

/** The criterion and the intended action as their jsonb parameters take them. */
function jsonParameters(
  row: Pick<InterpretationRow, 'has_criterion' | 'success_criterion' | 'intended_action'>,
) {
  return {
    criterion: row.has_criterion ? JSON.stringify(row.success_criterion) : null,
    action: row.intended_action === null ? null : JSON.stringify(row.intended_action),
  }
}

export function interpretationInsert(row: InterpretationRow): Statement {
  const json = jsonParameters(row)
  return {
    text: `INSERT INTO interpretations (${INTERPRETATION_COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10::jsonb, $11, $12, $13)`,
    values: [
      row.id,
      row.outcome_id,
      row.orchestrator_id,
      row.revision,
      row.has_criterion,
      json.criterion,
      row.success_criterion_signature,
      row.outcome_interpretation,
      row.evidence_hash,
      json.action,
      row.rationale,
      row.received_at,
      row.api_key_id,
    ],
    prepare: true,
  }
}

const FIRST_INTERPRETATION = `WITH target AS (
       -- Locks the row, and gives it a new version (src/engine/case-inputs.ts). The limits are judged on the row as
       -- locked, so concurrent first interpretations add up: the orchestrators, and the bound on the next
       -- manifest grown by what one more orchestrator can add (firstInterpretationGrowth).
       UPDATE outcomes SET
         manifest_bound = manifest_bound + $17 + interpreting::bigint
           * ($18 + longest_orchestrator_id + largest_criterion + $19::bigint * evidence_items),
         interpreting = interpreting + 1,
         unexpected_orchestrators = unexpected_orchestrators
           + CASE WHEN $3 = ANY(expected_orchestrators) THEN 0 ELSE 1 END,
         longest_orchestrator_id = greatest(longest_orchestrator_id, $20),
         largest_criterion = greatest(largest_criterion, $21)
       WHERE id = $1 AND status = 'open'
         AND EXISTS (SELECT 1 FROM evidence_versions v
                     WHERE v.outcome_id = outcomes.id AND v.evidence_hash = coalesce($2::text, outcomes.evidence_hash))
         AND NOT EXISTS (SELECT 1 FROM interpretations i WHERE i.outcome_id = outcomes.id AND i.orchestrator_id = $3)
         AND cardinality(expected_orchestrators) + unexpected_orchestrators
           + CASE WHEN $3 = ANY(expected_orchestrators) THEN 0 ELSE 1 END <= $22
         AND manifest_bound + $17 + interpreting::bigint
           * ($18 + longest_orchestrator_id + largest_criterion + $19::bigint * evidence_items) <= $23
       RETURNING id, subagent_id, coalesce($2::text, evidence_hash) AS evidence_hash
     ), judged AS (
       SELECT target.* FROM target
     ), created AS (
       INSERT INTO interpretations (${INTERPRETATION_COLUMNS})
       SELECT $4, judged.id, $3, 1, $5, $6::jsonb, $7, $8, judged.evidence_hash, $9::jsonb, $10, $11, $12
       FROM judged
     ), audit AS (
       ${auditAppendFrom('judged', {
         at: '$13',
         kind: '$14',
         actor: '$15',
         outcome_id: 'judged.id',
         subagent_id: 'judged.subagent_id',
         orchestrator_id: '$3',
         data: `$16::jsonb || jsonb_build_object('evidence_hash', judged.evidence_hash)`,
       })}
     )
     SELECT subagent_id, evidence_hash FROM judged`

/**
 * An orchestrator's first interpretation of an open outcome, and its audit entry, in one statement run with no
 * transaction around it. The outcome's row lock, held to the end of the statement, orders it against evaluation
 * as the transaction of submitInterpretation does: an evaluation that decided first left the outcome no longer
 * open, and this writes nothing. While the outcome is open it gives the row a new version (src/engine/case-inputs.ts),
 * even when it writes nothing else. It also writes nothing when the evidence version judged (`evidence_hash`,
 * null for the current one) is unknown or the orchestrator has interpreted before: that is for the transaction
 * to answer. A concurrent first submission of the same orchestrator fails on the revision's unique key.
 * Nor does it write when the outcome would then have too many orchestrators, or the bound on its next manifest
 * kept on the row, grown by what this interpretation can add, would pass the limit: the transaction names the
 * limit, or finds the exact bound within it.
 * Returns the outcome's subagent_id and the evidence version judged when written, no row when not.
 */
export function firstInterpretationInsert(
  row: Omit<InterpretationRow, 'revision' | 'evidence_hash'> & { evidence_hash: string | null },
  audit: { at: string; kind: AuditKind; actor: string; data: AuditData },
  growth: FirstInterpretationGrowth,
  limits: { orchestrators: number; manifest: number },
): Statement<{ subagent_id: string; evidence_hash: string }> {
  const json = jsonParameters(row)
  return named(FIRST_INTERPRETATION, [
    row.outcome_id,
    row.evidence_hash,
    row.orchestrator_id,
    row.id,
    row.has_criterion,
    json.criterion,
    row.success_criterion_signature,
    row.outcome_interpretation,
    json.action,
    row.rationale,
    row.received_at,
    row.api_key_id,
    audit.at,
    audit.kind,
    audit.actor,
    JSON.stringify(audit.data),
    growth.own,
    growth.perPair,
    growth.perItem,
    growth.idBytes,
    growth.criterionWeight,
    limits.orchestrators,
    limits.manifest,
  ])
}

/** The latest revision of each orchestrator, for each of the given outcomes. */
export function latestInterpretationsOf(outcomeIds: string[]): Statement<InterpretationRow> {
  return statement(
    `SELECT DISTINCT ON (outcome_id, orchestrator_id) ${INTERPRETATION_COLUMNS}
     FROM interpretations WHERE outcome_id = ANY($1::uuid[])
     ORDER BY outcome_id, orchestrator_id, revision DESC`,
    [outcomeIds],
  )
}

/** The orchestrator's latest revision for the outcome, if it has interpreted it. */
export function latestInterpretationOf(
  outcomeId: string,
  orchestratorId: string,
): Statement<InterpretationRow> {
  return statement(
    `SELECT ${INTERPRETATION_COLUMNS} FROM interpretations WHERE outcome_id = $1 AND orchestrator_id = $2
     ORDER BY revision DESC LIMIT 1`,
    [outcomeId, orchestratorId],
  )
}

/** dissents: an interpretation that arrived after the outcome's final decision (`manifest_id`), as submitted. */
export interface DissentRow {
  id: string
  outcome_id: string
  orchestrator_id: string
  manifest_id: string
  submission: JsonValue
  received_at: Date
  api_key_id: string
}

export function dissentInsert(dissent: DissentRow): Statement {
  return statement(
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

/**
 * Each orchestrator's latest interpretation of one outcome (`outcome`: a parameter or a column of the statement
 * around it) as `i`, beside the evidence version it judged as `v` (no row when that version is unknown), with
 * the select list `columns`: what a decision and the bound on the next manifest read.
 */
function latestJudged(columns: string, outcome: string): string {
  return `SELECT DISTINCT ON (i.orchestrator_id) ${columns}
     FROM interpretations i
     LEFT JOIN evidence_versions v ON v.outcome_id = i.outcome_id AND v.evidence_hash = i.evidence_hash
     WHERE i.outcome_id = ${outcome}
     ORDER BY i.orchestrator_id, i.revision DESC`
}

const LATEST_JUDGING = latestJudged(
  `${I_INTERPRETATION_COLUMNS}, coalesce(v.item_hashes, '{}') AS item_hashes`,
  '$1',
)

/**
 * The latest revision of each orchestrator for one outcome, each with the item hashes of the evidence version it
 * judged (empty when that version is unknown): what a decision reads, in one query.
 */
export function latestInterpretationsJudging(
  outcomeId: string,
): Statement<InterpretationRow & { item_hashes: string[] }> {
  return named(LATEST_JUDGING, [outcomeId])
}

/**
 * An orchestrator's latest interpretation as a decision reads it (see latestInterpretationsJudging), read inside
 * another statement: its time already in the API's form.
 */
export type JudgingInterpretation = Pick<
  InterpretationRow,
  | 'orchestrator_id'
  | 'revision'
  | 'has_criterion'
  | 'success_criterion'
  | 'success_criterion_signature'
  | 'outcome_interpretation'
  | 'evidence_hash'
  | 'intended_action'
> & { received_at: string; item_hashes: string[] }

const FOR_DECISION = `SELECT ${OUTCOME_COLUMNS}, xmin::text AS row_version,
       (SELECT coalesce(json_agg(j.* ORDER BY j.orchestrator_id), '[]')
        FROM (${latestJudged(
          `i.orchestrator_id, i.revision, i.has_criterion, i.success_criterion, i.success_criterion_signature,
           i.outcome_interpretation, i.evidence_hash, i.intended_action, ${isoText('i.received_at')} AS received_at,
           coalesce(v.item_hashes, '{}') AS item_hashes`,
          'o.id',
        )}) j) AS judging
     FROM outcomes o WHERE o.id = $1`

export type OutcomeForDecisionRow = OutcomeRow & { row_version: string; judging: JudgingInterpretation[] }

/**
 * The outcome, without locking it, with its row version (see rowWithVersion) and, in the same statement, each
 * orchestrator's latest interpretation as latestInterpretationsJudging reads it: everything an evaluation without
 * a transaction reads, in one round trip and one snapshot. Split its row with `splitOutcomeForDecision`.
 */
export function outcomeForDecision(id: string): Statement<OutcomeForDecisionRow> {
  return named(FOR_DECISION, [id])
}

/** A row of `outcomeForDecision` as the outcome, its version and its judging (undefined when there was none). */
export function splitOutcomeForDecision(
  found: OutcomeForDecisionRow | undefined,
): { case: OutcomeRow; version: string; judging: JudgingInterpretation[] } | undefined {
  if (found === undefined) return undefined
  const { row_version, judging, ...row } = found
  return { case: row, version: row_version, judging }
}

/**
 * Each orchestrator's latest interpretation as the bound on the outcome's next manifest reads it
 * (src/domain/outcome/manifest-bound.ts), with the size of the evidence version it judged.
 */
export interface InterpretationBoundRow {
  orchestrator_id: string
  revision: number
  has_criterion: boolean
  success_criterion: JsonValue | null
  success_criterion_signature: string
  intended_action: IntendedAction | null
  evidence_hash: string
  evidence_items: number
}

const LATEST_BOUNDS = latestJudged(
  `i.orchestrator_id, i.revision, i.has_criterion, i.success_criterion, i.success_criterion_signature,
   i.intended_action, i.evidence_hash, coalesce(cardinality(v.item_hashes), 0) AS evidence_items`,
  '$1',
)

export function latestInterpretationBounds(outcomeId: string): Statement<InterpretationBoundRow> {
  return named(LATEST_BOUNDS, [outcomeId])
}
