import { rowUpdate } from '../../db/row-version.ts'
import { builtOnce, named, type Statement, shiftPlaceholders, statement } from '../../db/statement.ts'
import type { HashedEvidenceItem } from '../../domain/outcome/evidence.ts'
import type { OutcomeBoundState } from '../../domain/outcome/manifest-bound.ts'
import type { OutcomeState } from '../../domain/outcome/transitions.ts'
import type { FallbackPolicy, OutcomeStatus } from '../../domain/outcome/vocabulary.ts'
import type { JsonValue } from '../../domain/shared/canonical-json.ts'

/*
 * The tables of outcome cases, one module each: outcomes (this one), their evidence (evidence-repository.ts),
 * interpretations and dissents (interpretation-repository.ts), and the outcome as shown, read from all of them
 * (view-repository.ts). Each function returns a statement; the caller runs it (src/db/statement.ts). Manifests,
 * escalations and probe runs are the engine's (src/db/repositories/).
 */

/**
 * outcomes: one sub-agent result shared by several orchestrators.
 * id; list_seq (insertion order, for cursors); subagent_id + run_id (the natural key); request_digest (hash of
 * the creation body, for idempotent retries); expected_orchestrators; deadline; arbiter_orchestrator_id;
 * probe_id + probe_params; fallback_policy; status; evidence_hash (current version); manifest_id (current
 * manifest); reevaluation_rounds (REEVALUATE manifests issued); created_at.
 */
export interface OutcomeRow {
  id: string
  list_seq: number
  subagent_id: string
  run_id: string
  request_digest: string
  expected_orchestrators: string[]
  deadline: Date | null
  arbiter_orchestrator_id: string | null
  probe_id: string | null
  probe_params: Record<string, JsonValue> | null
  fallback_policy: FallbackPolicy
  status: OutcomeStatus
  evidence_hash: string
  manifest_id: string | null
  reevaluation_rounds: number
  created_at: Date
}

export const OUTCOME_COLUMNS = `id, list_seq, subagent_id, run_id, request_digest, expected_orchestrators, deadline,
  arbiter_orchestrator_id, probe_id, probe_params, fallback_policy, status, evidence_hash, manifest_id,
  reevaluation_rounds, created_at`

export type NewOutcome = Omit<OutcomeRow, 'list_seq' | 'status' | 'manifest_id' | 'reevaluation_rounds'> & {
  /** The bound on its first manifest, before anyone interprets it (src/domain/outcome/manifest-bound.ts). */
  manifest_bound: number
  /** Its distinct evidence items. */
  evidence_items: number
}

/** The columns a new outcome is inserted with, and its values below, $1 to $14 (then its fixed columns). */
const NEW_OUTCOME_COLUMNS = `id, subagent_id, run_id, request_digest, expected_orchestrators, deadline,
  arbiter_orchestrator_id, probe_id, probe_params, fallback_policy, status, evidence_hash, created_at,
  manifest_bound, evidence_items, interpreting, unexpected_orchestrators`
const NEW_OUTCOME_VALUES = `$1, $2, $3, $4, $5::text[], $6, $7, $8, $9::jsonb, $10, 'open', $11, $12, $13, $14, 0, 0`

function outcomeValues(outcome: NewOutcome): unknown[] {
  return [
    outcome.id,
    outcome.subagent_id,
    outcome.run_id,
    outcome.request_digest,
    outcome.expected_orchestrators,
    outcome.deadline,
    outcome.arbiter_orchestrator_id,
    outcome.probe_id,
    outcome.probe_params === null ? null : JSON.stringify(outcome.probe_params),
    outcome.fallback_policy,
    outcome.evidence_hash,
    outcome.created_at,
    outcome.manifest_bound,
    outcome.evidence_items,
  ]
}

/** Inserts unless the natural key exists, RETURNING the row only when it inserted it (else read `outcomeByKey`). */
export function outcomeInsertIfAbsent(outcome: NewOutcome): Statement<OutcomeRow> {
  return statement(
    `INSERT INTO outcomes (${NEW_OUTCOME_COLUMNS}) VALUES (${NEW_OUTCOME_VALUES})
     ON CONFLICT (subagent_id, run_id) DO NOTHING
     RETURNING ${OUTCOME_COLUMNS}`,
    outcomeValues(outcome),
  )
}

/** The statement of `newOutcomeInsert`, around its audit entries' INSERT. */
const newOutcomeText = builtOnce(
  (audit) =>
    `WITH created AS (
       INSERT INTO outcomes (${NEW_OUTCOME_COLUMNS})
       SELECT ${NEW_OUTCOME_VALUES}
       WHERE NOT EXISTS (SELECT 1 FROM subagent_policies WHERE subagent_id = $2)
       ON CONFLICT (subagent_id, run_id) DO NOTHING
       RETURNING id
     ), items AS (
       INSERT INTO evidence_items (outcome_id, item_hash, position, item)
       SELECT created.id, ($15::text[])[o], o, i
       FROM created, jsonb_array_elements($16::jsonb) WITH ORDINALITY AS t(i, o)
     ), version AS (
       INSERT INTO evidence_versions (outcome_id, evidence_hash, version, item_hashes, created_at)
       SELECT created.id, $11, 1, $17::text[], $12 FROM created
     ), audit AS (
       ${shiftPlaceholders(audit, 17)} WHERE EXISTS (SELECT 1 FROM created)
     )
     SELECT id FROM created`,
)

/**
 * A new outcome as one statement, run with no transaction around it: the outcome row, its evidence items, its
 * first evidence version and its audit entries commit together or not at all. Writes nothing, and returns no
 * row, when the natural key exists or the sub-agent has a policy (its rules, not the body's, would apply): the
 * caller then takes the path that reads both.
 */
export function newOutcomeInsert(
  outcome: NewOutcome,
  evidence: { items: readonly HashedEvidenceItem[]; item_hashes: string[] },
  audit: Statement,
): Statement<{ id: string }> {
  return named(newOutcomeText(audit.text), [
    ...outcomeValues(outcome),
    evidence.items.map((i) => i.item_hash),
    // As in evidenceItemsInsert: the canonical texts already hashed, as one JSON array.
    `[${evidence.items.map((i) => i.canonical).join(',')}]`,
    evidence.item_hashes,
    ...audit.values,
  ])
}

export function outcomeByKey(subagentId: string, runId: string): Statement<OutcomeRow> {
  return statement(`SELECT ${OUTCOME_COLUMNS} FROM outcomes WHERE subagent_id = $1 AND run_id = $2`, [
    subagentId,
    runId,
  ])
}

export function outcomeById(id: string): Statement<OutcomeRow> {
  return named(`SELECT ${OUTCOME_COLUMNS} FROM outcomes WHERE id = $1`, [id])
}

/** The outcome, locked until the transaction ends: the row lock serializes everything that changes it. */
export function outcomeLock(id: string): Statement<OutcomeRow> {
  return named(`SELECT ${OUTCOME_COLUMNS} FROM outcomes WHERE id = $1 FOR UPDATE`, [id])
}

/** The outcome's state after a manifest (its status and re-evaluation rounds), and that manifest as its current. */
type StateAfterManifest = OutcomeState & { manifestId: string }

const STATE = rowUpdate('outcomes', 'status = $2, manifest_id = $3, reevaluation_rounds = $4')

function stateValues(id: string, state: StateAfterManifest): unknown[] {
  return [id, state.status, state.manifestId, state.reevaluation_rounds]
}

export function outcomeStateUpdate(id: string, state: StateAfterManifest): Statement {
  return STATE.update(stateValues(id, state))
}

/** outcomeStateUpdate, only while the row is at `version` (outcomeForDecision); RETURNING id when it was. */
export function outcomeStateUpdateIf(id: string, version: string, state: StateAfterManifest): Statement {
  return STATE.updateIf(stateValues(id, state), version)
}

/** The outcome's current evidence version and its number of distinct items, once evidence is appended. */
export function outcomeEvidenceUpdate(id: string, evidenceHash: string, evidenceItems: number): Statement {
  return statement('UPDATE outcomes SET evidence_hash = $2, evidence_items = $3 WHERE id = $1', [
    id,
    evidenceHash,
    evidenceItems,
  ])
}

const BOUND = rowUpdate(
  'outcomes',
  `manifest_bound = $2, interpreting = $3, unexpected_orchestrators = $4, longest_orchestrator_id = $5,
   largest_criterion = $6`,
)

/**
 * The bound on the outcome's next manifest and what it grows by (src/domain/outcome/manifest-bound.ts), written
 * with each revised interpretation: also the outcome row's new version, so that an evaluation that read the
 * outcome before (CaseKind.optimistic) does not write a decision that misses the revision.
 */
export function outcomeBoundUpdate(id: string, state: OutcomeBoundState): Statement {
  return BOUND.update([
    id,
    state.manifest_bound,
    state.interpreting,
    state.unexpected_orchestrators,
    state.longest_orchestrator_id,
    state.largest_criterion,
  ])
}
