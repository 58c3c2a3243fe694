import type { AuditData } from '../../audit-log/append.ts'
import { boundedPageQuery } from '../../db/bounded-page.ts'
import { isoText } from '../../db/iso-text.ts'
import type { Queryable } from '../../db/pool.ts'
import { builtOnce, named, runStatement, type Statement, shiftPlaceholders } from '../../db/statement.ts'
import type { EvidenceItem, HashedEvidenceItem } from '../../domain/outcome/evidence.ts'
import type { IntendedAction, ManifestInterpretation } from '../../domain/outcome/interpretation.ts'
import type { FirstInterpretationGrowth, OutcomeBoundState } from '../../domain/outcome/manifest-bound.ts'
import type { FallbackPolicy, OutcomeReading, OutcomeStatus } from '../../domain/outcome/vocabulary.ts'
import type { JsonValue } from '../../domain/shared/canonical-json.ts'
import type { AuditKind } from '../../domain/vocabulary.ts'

/*
 * The tables of outcome cases: outcomes, their evidence (items and versions), interpretations and dissents.
 * Manifests, escalations and probe runs are the engine's (src/db/repositories/).
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

const OUTCOME_COLUMNS = `id, list_seq, subagent_id, run_id, request_digest, expected_orchestrators, deadline,
  arbiter_orchestrator_id, probe_id, probe_params, fallback_policy, status, evidence_hash, manifest_id,
  reevaluation_rounds, created_at`

export type NewOutcome = Omit<OutcomeRow, 'list_seq' | 'status' | 'manifest_id' | 'reevaluation_rounds'> & {
  /** The bound on its first manifest, before anyone interprets it (src/domain/outcome/manifest-bound.ts). */
  manifest_bound: number
  /** Its distinct evidence items. */
  evidence_items: number
}

/** A new outcome's columns as the INSERTs below take them, $1 to $14. */
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

/** Inserts unless the natural key exists; returns the row that holds the key either way. */
export async function insertOutcomeIfAbsent(
  db: Queryable,
  outcome: NewOutcome,
): Promise<{ row: OutcomeRow; inserted: boolean }> {
  const { rows } = await db.query<OutcomeRow>(
    `INSERT INTO outcomes (id, subagent_id, run_id, request_digest, expected_orchestrators, deadline,
       arbiter_orchestrator_id, probe_id, probe_params, fallback_policy, status, evidence_hash, created_at,
       manifest_bound, evidence_items, interpreting, unexpected_orchestrators)
     VALUES ($1, $2, $3, $4, $5::text[], $6, $7, $8, $9::jsonb, $10, 'open', $11, $12, $13, $14, 0, 0)
     ON CONFLICT (subagent_id, run_id) DO NOTHING
     RETURNING ${OUTCOME_COLUMNS}`,
    outcomeValues(outcome),
  )
  if (rows[0]) return { row: rows[0], inserted: true }
  const existing = await findOutcomeByKey(db, outcome.subagent_id, outcome.run_id)
  if (!existing) throw new Error('outcome natural key conflict without a row')
  return { row: existing, inserted: false }
}

/** The statement of `insertNewOutcome`, around its audit entries' INSERT. */
const newOutcomeText = builtOnce(
  (audit) =>
    `WITH created AS (
       INSERT INTO outcomes (id, subagent_id, run_id, request_digest, expected_orchestrators, deadline,
         arbiter_orchestrator_id, probe_id, probe_params, fallback_policy, status, evidence_hash, created_at,
         manifest_bound, evidence_items, interpreting, unexpected_orchestrators)
       SELECT $1, $2, $3, $4, $5::text[], $6, $7, $8, $9::jsonb, $10, 'open', $11, $12, $13, $14, 0, 0
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
 * A new outcome in one statement, with no transaction around it: the outcome row, its evidence items, its first
 * evidence version and its audit entries commit together or not at all. Writes nothing, and answers false, when
 * the natural key exists or the sub-agent has a policy (its rules, not the body's, would apply): the caller then
 * takes the path that reads both.
 */
export async function insertNewOutcome(
  db: Queryable,
  outcome: NewOutcome,
  evidence: { items: readonly HashedEvidenceItem[]; item_hashes: string[] },
  audit: Statement,
): Promise<boolean> {
  const { rows } = await db.query(
    named(newOutcomeText(audit.text), [
      ...outcomeValues(outcome),
      evidence.items.map((i) => i.item_hash),
      // As in insertEvidenceItems: the canonical texts already hashed, as one JSON array.
      `[${evidence.items.map((i) => i.canonical).join(',')}]`,
      evidence.item_hashes,
      ...audit.values,
    ]),
  )
  return rows.length === 1
}

export async function findOutcomeByKey(db: Queryable, subagentId: string, runId: string) {
  const { rows } = await db.query<OutcomeRow>(
    `SELECT ${OUTCOME_COLUMNS} FROM outcomes WHERE subagent_id = $1 AND run_id = $2`,
    [subagentId, runId],
  )
  return rows[0]
}

export async function findOutcome(db: Queryable, id: string, options: { lock?: boolean } = {}) {
  const { rows } = await db.query<OutcomeRow>(
    named(`SELECT ${OUTCOME_COLUMNS} FROM outcomes WHERE id = $1${options.lock ? ' FOR UPDATE' : ''}`, [id]),
  )
  return rows[0]
}

/**
 * An outcome as GET /v1/outcomes shows it, read in one statement: its row, its evidence versions (oldest first),
 * its items (in order) and each orchestrator's latest interpretation (in no particular order), the times already
 * in the API's form.
 */
export interface OutcomeViewRow extends OutcomeRow {
  evidence_versions: { evidence_hash: string; item_hashes: string[]; created_at: string }[]
  evidence: EvidenceItem[]
  interpretations: ManifestInterpretation[]
}

const OUTCOME_VIEW_COLUMNS = `${OUTCOME_COLUMNS},
  (SELECT coalesce(json_agg(json_build_object('evidence_hash', v.evidence_hash, 'item_hashes', v.item_hashes,
            'created_at', ${isoText('v.created_at')}) ORDER BY v.version), '[]')
   FROM evidence_versions v WHERE v.outcome_id = o.id) AS evidence_versions,
  (SELECT coalesce(json_agg(e.item ORDER BY e.position), '[]')
   FROM evidence_items e WHERE e.outcome_id = o.id) AS evidence,
  (SELECT coalesce(json_agg(json_build_object('orchestrator_id', i.orchestrator_id,
            'success_criterion_signature', i.success_criterion_signature,
            'outcome_interpretation', i.outcome_interpretation, 'evidence_hash', i.evidence_hash,
            'intended_action', i.intended_action, 'revision', i.revision,
            'received_at', ${isoText('i.received_at')})), '[]')
   FROM (SELECT DISTINCT ON (l.orchestrator_id) l.* FROM interpretations l WHERE l.outcome_id = o.id
         ORDER BY l.orchestrator_id, l.revision DESC) i) AS interpretations`

/** One outcome as shown (see OutcomeViewRow), in one round trip. */
export async function findOutcomeView(db: Queryable, id: string): Promise<OutcomeViewRow | undefined> {
  const { rows } = await db.query<OutcomeViewRow>(
    named(`SELECT ${OUTCOME_VIEW_COLUMNS} FROM outcomes o WHERE o.id = $1`, [id]),
  )
  return rows[0]
}

/**
 * A page of outcomes as shown, bounded in bytes (src/db/bounded-page.ts): an outcome's size is its evidence items,
 * its evidence versions' item hashes and its interpretations, and a fixed part for its own columns.
 */
const OUTCOME_PAGE = boundedPageQuery({
  table: 'outcomes',
  alias: 'o',
  columns: OUTCOME_VIEW_COLUMNS,
  where: `($1::text IS NULL OR o.subagent_id = $1) AND ($2::text IS NULL OR o.status = $2)
       AND ($3::bigint IS NULL OR o.list_seq > $3)`,
  order: ['list_seq'],
  itemBytes: `2048
    + coalesce((SELECT sum(octet_length(e.item::text)) FROM evidence_items e WHERE e.outcome_id = o.id), 0)
    + coalesce((SELECT sum(120 + 74 * cardinality(v.item_hashes)) FROM evidence_versions v
                WHERE v.outcome_id = o.id), 0)
    + coalesce((SELECT sum(500 + coalesce(octet_length(i.intended_action::text), 0)) FROM interpretations i
                WHERE i.outcome_id = o.id), 0)`,
  limit: '$4',
})

/** A page of outcomes as shown (see OutcomeViewRow), in creation order after `afterSeq`, in one round trip. */
export async function listOutcomeViews(
  db: Queryable,
  filter: { subagentId?: string | undefined; status?: OutcomeStatus | undefined; afterSeq: number | null },
  limit: number,
) {
  const { rows } = await db.query<OutcomeViewRow>(OUTCOME_PAGE, [
    filter.subagentId ?? null,
    filter.status ?? null,
    filter.afterSeq,
    limit,
  ])
  return rows
}

/** The outcome's state after a manifest: its status, current manifest and re-evaluation rounds. */
export async function updateOutcomeState(
  db: Queryable,
  id: string,
  state: { status: OutcomeStatus; reevaluation_rounds: number; manifestId: string },
): Promise<void> {
  await runStatement(db, outcomeStateUpdate(id, state))
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

/**
 * The outcome, without locking it, with its row version (see findWithRowVersion) and, in the same statement, each orchestrator's latest
 * interpretation as latestInterpretationsJudging reads it: everything an evaluation without a transaction reads,
 * in one round trip and one snapshot.
 */
export async function findOutcomeForDecision(
  db: Queryable,
  id: string,
): Promise<{ case: OutcomeRow; version: string; judging: JudgingInterpretation[] } | undefined> {
  const { rows } = await db.query<OutcomeRow & { row_version: string; judging: JudgingInterpretation[] }>(
    named(
      `SELECT ${OUTCOME_COLUMNS}, xmin::text AS row_version,
       (SELECT coalesce(json_agg(j.* ORDER BY j.orchestrator_id), '[]')
        FROM (SELECT DISTINCT ON (i.orchestrator_id) i.orchestrator_id, i.revision, i.has_criterion,
                     i.success_criterion, i.success_criterion_signature, i.outcome_interpretation, i.evidence_hash,
                     i.intended_action, ${isoText('i.received_at')} AS received_at,
                     coalesce(v.item_hashes, '{}') AS item_hashes
              FROM interpretations i
              LEFT JOIN evidence_versions v ON v.outcome_id = i.outcome_id AND v.evidence_hash = i.evidence_hash
              WHERE i.outcome_id = o.id
              ORDER BY i.orchestrator_id, i.revision DESC) j) AS judging
     FROM outcomes o WHERE o.id = $1`,
      [id],
    ),
  )
  const found = rows[0]
  if (found === undefined) return undefined
  const { row_version, judging, ...row } = found
  return { case: row, version: row_version, judging }
}

/** outcomeStateUpdate, only while the row is at `version` (findOutcomeForDecision); RETURNING id when it was. */
export function outcomeStateUpdateIf(
  id: string,
  version: string,
  state: { status: OutcomeStatus; reevaluation_rounds: number; manifestId: string },
): Statement {
  return {
    text: `UPDATE outcomes SET status = $2, manifest_id = $3, reevaluation_rounds = $4
     WHERE id = $1 AND xmin::text = $5 RETURNING id`,
    values: [id, state.status, state.manifestId, state.reevaluation_rounds, version],
    prepare: true,
  }
}

/**
 * A write of the outcome row that changes nothing but its version: a new interpretation goes with it, so that an
 * evaluation that read the outcome before (CaseKind.optimistic) does not write a decision that misses it.
 */
export function outcomeTouch(id: string): Statement {
  return { text: 'UPDATE outcomes SET status = status WHERE id = $1', values: [id], prepare: true }
}

export function outcomeStateUpdate(
  id: string,
  state: { status: OutcomeStatus; reevaluation_rounds: number; manifestId: string },
): Statement {
  return {
    text: 'UPDATE outcomes SET status = $2, manifest_id = $3, reevaluation_rounds = $4 WHERE id = $1',
    values: [id, state.status, state.manifestId, state.reevaluation_rounds],
    prepare: true,
  }
}

export async function updateOutcomeEvidenceHash(
  db: Queryable,
  id: string,
  evidenceHash: string,
  evidenceItems: number,
): Promise<void> {
  await db.query('UPDATE outcomes SET evidence_hash = $2, evidence_items = $3 WHERE id = $1', [
    id,
    evidenceHash,
    evidenceItems,
  ])
}

/** evidence_items: every distinct item of an outcome (by item_hash), in order of first submission. */
export interface EvidenceItemRow {
  item_hash: string
  position: number
  item: EvidenceItem
}

/** evidence_versions: each evidence_hash the outcome has had and the item hashes it covers. */
export interface EvidenceVersionRow {
  evidence_hash: string
  version: number
  item_hashes: string[]
  created_at: Date
}

export async function insertEvidenceItems(
  db: Queryable,
  outcomeId: string,
  items: readonly HashedEvidenceItem[],
): Promise<void> {
  if (items.length === 0) return
  // The items go as one JSON array of the canonical texts already hashed: a jsonb[] parameter would have the
  // driver escape every quote of every item again, megabytes of work on the event loop for large evidence.
  await db.query(
    `INSERT INTO evidence_items (outcome_id, item_hash, position, item)
     SELECT $1, ($2::text[])[o], coalesce((SELECT max(position) FROM evidence_items WHERE outcome_id = $1), 0) + o, i
     FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS t(i, o)
     ON CONFLICT (outcome_id, item_hash) DO NOTHING`,
    [outcomeId, items.map((i) => i.item_hash), `[${items.map((i) => i.canonical).join(',')}]`],
  )
}

export async function insertEvidenceVersion(
  db: Queryable,
  outcomeId: string,
  version: { evidence_hash: string; item_hashes: string[]; created_at: Date },
): Promise<void> {
  await db.query(
    `INSERT INTO evidence_versions (outcome_id, evidence_hash, version, item_hashes, created_at)
     VALUES ($1, $2, coalesce((SELECT max(version) FROM evidence_versions WHERE outcome_id = $1), 0) + 1, $3::text[], $4)
     ON CONFLICT (outcome_id, evidence_hash) DO NOTHING`,
    [outcomeId, version.evidence_hash, version.item_hashes, version.created_at],
  )
}

export async function listEvidenceVersions(db: Queryable, outcomeIds: string[]) {
  const { rows } = await db.query<EvidenceVersionRow & { outcome_id: string }>(
    `SELECT outcome_id, evidence_hash, version, item_hashes, created_at FROM evidence_versions
     WHERE outcome_id = ANY($1::uuid[]) ORDER BY outcome_id, version`,
    [outcomeIds],
  )
  return rows
}

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

export function interpretationInsert(row: InterpretationRow): Statement {
  return {
    text: `INSERT INTO interpretations (${INTERPRETATION_COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10::jsonb, $11, $12, $13)`,
    values: [
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
    prepare: true,
  }
}

/**
 * An orchestrator's first interpretation of an open outcome, and its audit entry, in one statement with no
 * transaction around it. The outcome's row lock, held to the end of the statement, orders it against evaluation
 * as the transaction of submitInterpretation does: an evaluation that decided first left the outcome no longer
 * open, and this writes nothing. While the outcome is open it gives the row a new version (see outcomeTouch),
 * even when it writes nothing else. It also writes nothing when the evidence version judged (`evidence_hash`,
 * null for the current one) is unknown or the orchestrator has interpreted before: that is for the transaction to answer.
 * A concurrent first submission of the same orchestrator fails on the revision's unique key.
 * Nor does it write when the outcome would then have too many orchestrators, or the bound on its next manifest
 * kept on the row, grown by what this interpretation can add, would pass the limit: the transaction names the
 * limit, or finds the exact bound within it.
 * Answers the outcome's subagent_id and the evidence version judged when written.
 */
export async function insertFirstInterpretation(
  db: Queryable,
  row: Omit<InterpretationRow, 'revision' | 'evidence_hash'> & { evidence_hash: string | null },
  audit: { at: string; kind: AuditKind; actor: string; data: AuditData },
  growth: FirstInterpretationGrowth,
  limits: { orchestrators: number; manifest: number },
): Promise<{ subagent_id: string; evidence_hash: string } | undefined> {
  const { rows } = await db.query<{ subagent_id: string; evidence_hash: string }>(
    named(
      `WITH target AS (
       -- Locks the row, and gives it a new version (see outcomeTouch). The limits are judged on the row as
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
       INSERT INTO audit_intake (at, kind, actor, outcome_id, subagent_id, orchestrator_id, data)
       SELECT $13, $14, $15, judged.id, judged.subagent_id, $3,
              $16::jsonb || jsonb_build_object('evidence_hash', judged.evidence_hash)
       FROM judged
     )
     SELECT subagent_id, evidence_hash FROM judged`,
      [
        row.outcome_id,
        row.evidence_hash,
        row.orchestrator_id,
        row.id,
        row.has_criterion,
        row.has_criterion ? JSON.stringify(row.success_criterion) : null,
        row.success_criterion_signature,
        row.outcome_interpretation,
        row.intended_action === null ? null : JSON.stringify(row.intended_action),
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
      ],
    ),
  )
  return rows[0]
}

/** The latest revision of each orchestrator, for each of the given outcomes. */
export async function latestInterpretations(
  db: Queryable,
  outcomeIds: string[],
): Promise<InterpretationRow[]> {
  const { rows } = await db.query<InterpretationRow>(
    `SELECT DISTINCT ON (outcome_id, orchestrator_id) ${INTERPRETATION_COLUMNS}
     FROM interpretations WHERE outcome_id = ANY($1::uuid[])
     ORDER BY outcome_id, orchestrator_id, revision DESC`,
    [outcomeIds],
  )
  return rows
}

/**
 * The latest revision of each orchestrator for one outcome, each with the item hashes of the evidence version it
 * judged (empty when that version is unknown): what a decision reads, in one query.
 */
export async function latestInterpretationsJudging(
  db: Queryable,
  outcomeId: string,
): Promise<(InterpretationRow & { item_hashes: string[] })[]> {
  const { rows } = await db.query<InterpretationRow & { item_hashes: string[] }>(
    named(
      `SELECT DISTINCT ON (i.orchestrator_id) i.id, i.outcome_id, i.orchestrator_id, i.revision,
       i.has_criterion, i.success_criterion, i.success_criterion_signature, i.outcome_interpretation, i.evidence_hash,
       i.intended_action, i.rationale, i.received_at, i.api_key_id,
       coalesce(v.item_hashes, '{}') AS item_hashes
     FROM interpretations i
     LEFT JOIN evidence_versions v ON v.outcome_id = i.outcome_id AND v.evidence_hash = i.evidence_hash
     WHERE i.outcome_id = $1
     ORDER BY i.orchestrator_id, i.revision DESC`,
      [outcomeId],
    ),
  )
  return rows
}

export async function latestInterpretationOf(db: Queryable, outcomeId: string, orchestratorId: string) {
  const { rows } = await db.query<InterpretationRow>(
    `SELECT ${INTERPRETATION_COLUMNS} FROM interpretations WHERE outcome_id = $1 AND orchestrator_id = $2
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

export async function latestInterpretationBounds(
  db: Queryable,
  outcomeId: string,
): Promise<InterpretationBoundRow[]> {
  const { rows } = await db.query<InterpretationBoundRow>(
    named(
      `SELECT DISTINCT ON (i.orchestrator_id) i.orchestrator_id, i.revision, i.has_criterion, i.success_criterion,
       i.success_criterion_signature, i.intended_action, i.evidence_hash,
       coalesce(cardinality(v.item_hashes), 0) AS evidence_items
     FROM interpretations i
     LEFT JOIN evidence_versions v ON v.outcome_id = i.outcome_id AND v.evidence_hash = i.evidence_hash
     WHERE i.outcome_id = $1
     ORDER BY i.orchestrator_id, i.revision DESC`,
      [outcomeId],
    ),
  )
  return rows
}

/** Each evidence version of an outcome with its number of items (not the items: a version may list a thousand). */
export async function evidenceVersionSizes(
  db: Queryable,
  outcomeId: string,
): Promise<{ evidence_hash: string; items: number }[]> {
  const { rows } = await db.query<{ evidence_hash: string; items: number }>(
    named(
      `SELECT evidence_hash, cardinality(item_hashes) AS items FROM evidence_versions WHERE outcome_id = $1`,
      [outcomeId],
    ),
  )
  return rows
}

export function outcomeBoundUpdate(id: string, state: OutcomeBoundState): Statement {
  return {
    text: `UPDATE outcomes SET manifest_bound = $2, interpreting = $3, unexpected_orchestrators = $4,
       longest_orchestrator_id = $5, largest_criterion = $6 WHERE id = $1`,
    values: [
      id,
      state.manifest_bound,
      state.interpreting,
      state.unexpected_orchestrators,
      state.longest_orchestrator_id,
      state.largest_criterion,
    ],
    prepare: true,
  }
}
