import { type AuditData, auditAppendFrom } from '../../audit-log/append.ts'
import { latestOfEach } from '../../db/case-views.ts'
import { ownedCaseReads } from '../../db/owned-cases.ts'
import { rowUpdate, rowWithVersion } from '../../db/row-version.ts'
import { insertWithAudit, named, type Statement, statement } from '../../db/statement.ts'
import type { DecompositionReport } from '../../domain/fanout/decomposition.ts'
import type { FanoutPolicy, FanoutStatus } from '../../domain/fanout/vocabulary.ts'
import type { JsonValue } from '../../domain/shared/canonical-json.ts'
import type { ReportStatus } from '../../domain/status-report.ts'
import type { AuditKind } from '../../domain/vocabulary.ts'

/*
 * The tables of fan-out cases: fan-outs and their subtasks' results. Manifests, escalations and audit records are
 * the engine's (src/db/repositories/, src/audit-log/).
 */

/** A subtask as stored and shown: absent `scope` is null. */
export interface StoredSubtask {
  subtask_id: string
  scope: string | null
  facts: string[]
}

/**
 * fanouts: one orchestrator's question split into subtasks.
 * id; list_seq (insertion order, for cursors); orchestrator_id + fanout_key (the natural key); request_digest
 * (hash of the creation body with defaults filled in, for idempotent retries); question; facts (as listed);
 * subtasks (as given, scope null when absent); deadline; policy (defaults filled in) and policy_digest;
 * decomposition (the creation-time check); status; manifest_id (current manifest); closed_at (when the owner
 * stopped waiting for missing subtasks); created_at; claims_total, results_bytes and manifest_weight (the sums
 * of the latest results' parts, see ResultRow) and manifest_base (the fan-out's own part of the bound on its
 * next manifest): what its limits are checked against (docs/limits.md).
 */
export interface FanoutRow {
  id: string
  list_seq: number
  orchestrator_id: string
  fanout_key: string
  request_digest: string
  question: string
  facts: string[]
  subtasks: StoredSubtask[]
  deadline: Date | null
  policy: FanoutPolicy
  policy_digest: string
  decomposition: DecompositionReport
  status: FanoutStatus
  manifest_id: string | null
  closed_at: Date | null
  created_at: Date
  claims_total: number
  /** bigint columns, read as numbers: each stays far below 2^53. */
  results_bytes: number
  manifest_weight: number
  manifest_base: number
}

const FANOUT_COLUMNS = `id, list_seq, orchestrator_id, fanout_key, request_digest, question, facts, subtasks,
  deadline, policy, policy_digest, decomposition, status, manifest_id, closed_at, created_at, claims_total,
  results_bytes::float8 AS results_bytes, manifest_weight::float8 AS manifest_weight,
  manifest_base::float8 AS manifest_base`

export type NewFanout = Omit<
  FanoutRow,
  'list_seq' | 'status' | 'manifest_id' | 'closed_at' | 'claims_total' | 'results_bytes' | 'manifest_weight'
>

/** The statement of `fanoutInsertIfAbsent`, around its audit entries' INSERT. */
const newFanoutText = insertWithAudit(
  `INSERT INTO fanouts (id, orchestrator_id, fanout_key, request_digest, question, facts, subtasks, deadline,
     policy, policy_digest, decomposition, status, created_at, manifest_base)
   VALUES ($1, $2, $3, $4, $5, $6::text[], $7::jsonb, $8, $9::jsonb, $10, $11::jsonb, 'open', $12, $13)
   ON CONFLICT (orchestrator_id, fanout_key) DO NOTHING
   RETURNING ${FANOUT_COLUMNS}`,
  13,
)

/**
 * Inserts unless the natural key exists, RETURNING the row only when it inserted it (else read `fanoutByKey`).
 * `audit` (its audit entries) is written in the same statement, only when the fan-out is: one round trip, no
 * transaction needed.
 */
export function fanoutInsertIfAbsent(fanout: NewFanout, audit: Statement): Statement<FanoutRow> {
  const { id, orchestrator_id, fanout_key, request_digest, question, facts, subtasks, deadline } = fanout
  const { policy, policy_digest, decomposition, created_at, manifest_base } = fanout
  return named(newFanoutText(audit.text), [
    id,
    orchestrator_id,
    fanout_key,
    request_digest,
    question,
    facts,
    JSON.stringify(subtasks),
    deadline,
    JSON.stringify(policy),
    policy_digest,
    JSON.stringify(decomposition),
    created_at,
    manifest_base,
    ...audit.values,
  ])
}

/**
 * A fan-out as GET /v1/fanouts shows it, read in one statement: its row and the latest result of each subtask
 * (without its body, in no particular order), the times already in the API's form.
 */
export interface FanoutViewRow extends FanoutRow {
  results: (Omit<ResultSummaryRow, 'fanout_id' | 'received_at'> & { received_at: string })[]
}

const FANOUT_VIEW_COLUMNS = `${FANOUT_COLUMNS},
  ${latestOfEach({
    table: 'fanout_results',
    parent: 'fanout_id',
    caseId: 'f.id',
    key: 'subtask_id',
    latest: 'revision',
    columns: ['subtask_id', 'revision', 'status', 'result_digest', 'late'],
    times: ['received_at'],
  })} AS results`

/**
 * A fan-out by its natural key, or by id (locked if asked); and as shown (see FanoutViewRow), one or a page at a
 * time: a page is bounded in bytes, a fan-out's size is its row as JSON and a summary per subtask that has answered.
 */
export const {
  byKey: fanoutByKey,
  byId: fanoutById,
  view: fanoutView,
  viewsPage: fanoutViewsPage,
} = ownedCaseReads<FanoutRow, FanoutViewRow, FanoutStatus>({
  name: 'fanouts',
  columns: FANOUT_COLUMNS,
  keyColumn: 'fanout_key',
  prepared: true,
  alias: 'f',
  viewColumns: FANOUT_VIEW_COLUMNS,
  itemBytes: `octet_length(row_to_json(f)::text)
    + coalesce((SELECT 300 * count(DISTINCT r.subtask_id) FROM fanout_results r WHERE r.fanout_id = f.id), 0)`,
})

/** The fan-out with its row version, without locking it: what a reconciliation without a transaction reads
 * (split it with splitRowVersion). */
export function fanoutWithVersion(id: string) {
  return rowWithVersion<FanoutRow>('fanouts', FANOUT_COLUMNS, id)
}

/** The fan-out's state after a manifest: its status, its current manifest, and when it was closed (if it was). */
export interface FanoutState {
  status: FanoutStatus
  manifestId: string
  closedAt: Date | null
}

const STATE = rowUpdate('fanouts', 'status = $2, manifest_id = $3, closed_at = $4')

/** fanoutStateUpdate, only while the row is at `version` (fanoutWithVersion); RETURNING id when it was. */
export function fanoutStateUpdateIf(id: string, version: string, state: FanoutState): Statement {
  return STATE.updateIf([id, state.status, state.manifestId, state.closedAt], version)
}

/**
 * A write of the fan-out row that changes nothing but its version: a new result goes with it, so that a
 * reconciliation that read the fan-out before (CaseKind.optimistic) does not write a decision that misses it.
 */
export function fanoutTouch(id: string): Statement {
  return { text: 'UPDATE fanouts SET status = status WHERE id = $1', values: [id], prepare: true }
}

export function fanoutStateUpdate(id: string, state: FanoutState): Statement {
  return STATE.update([id, state.status, state.manifestId, state.closedAt])
}

/** What one result adds to its fan-out's totals (src/domain/fanout/result-limits.ts). */
export interface ResultParts {
  claim_count: number
  jcs_bytes: number
  manifest_weight: number
}

/**
 * fanout_results: every revision of every subtask's result.
 * fanout_id + subtask_id + revision (1, 2, …); status (the status report's); body (the status report exactly as
 * submitted); result_digest (sha256(JCS(body))); late (received after the deadline); received_at; api_key_id (who
 * submitted); claim_count, jcs_bytes, manifest_weight (its parts of the fan-out's totals, see FanoutRow).
 */
export interface ResultRow extends ResultParts {
  fanout_id: string
  subtask_id: string
  revision: number
  status: ReportStatus
  body: { [key: string]: JsonValue }
  result_digest: string
  late: boolean
  received_at: Date
  api_key_id: string | null
}

/** A result without its body: what lists and answers show. */
export type ResultSummaryRow = Omit<ResultRow, 'body' | 'api_key_id' | keyof ResultParts>

const SUMMARY_COLUMNS = 'fanout_id, subtask_id, revision, status, result_digest, late, received_at'
const RESULT_COLUMNS = `${SUMMARY_COLUMNS}, body, api_key_id`
const INSERT_COLUMNS = `${RESULT_COLUMNS}, claim_count, jcs_bytes, manifest_weight`

export function resultInsert(row: ResultRow): Statement {
  return {
    text: `INSERT INTO fanout_results (${INSERT_COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12)`,
    values: [
      row.fanout_id,
      row.subtask_id,
      row.revision,
      row.status,
      row.result_digest,
      row.late,
      row.received_at,
      JSON.stringify(row.body),
      row.api_key_id,
      row.claim_count,
      row.jcs_bytes,
      row.manifest_weight,
    ],
    prepare: true,
  }
}

/**
 * The fan-out's totals once a revision replaces its subtask's previous result: also a new version of the row (see
 * fanoutTouch).
 */
export function fanoutTotalsUpdate(
  id: string,
  totals: { claims: number; bytes: number; manifest_weight: number },
): Statement {
  return {
    text: 'UPDATE fanouts SET claims_total = $2, results_bytes = $3, manifest_weight = $4 WHERE id = $1',
    values: [id, totals.claims, totals.bytes, totals.manifest_weight],
    prepare: true,
  }
}

/** firstResultInsert's audit entry: resultRecorded's, with `late` and the orchestrator from the fan-out row. */
const FIRST_RESULT_AUDIT = auditAppendFrom('judged', {
  at: '$11',
  kind: '$12',
  actor: '$13',
  orchestrator_id: 'judged.orchestrator_id',
  data: `$14::jsonb || jsonb_build_object('late', judged.late)`,
})

/**
 * A subtask's first result on an open fan-out, and its audit entry, in one statement with no transaction around
 * it. The fan-out's row lock, held to the end of the statement, orders it against reconciliation as the
 * transaction of submitResult does: a reconciliation that decided first left the fan-out no longer open, and this
 * writes nothing. It writes nothing either unless the caller may write to the fan-out (an admin, or a key of its
 * orchestrator), the subtask is one of the fan-out's, the claims' facts are among its facts, and the subtask has
 * no result yet: the transaction answers all of those. Nor does it write when the fan-out's totals with this
 * result would pass `limits` (the transaction names the limit). When it writes, it adds the result's parts to the
 * totals, which gives the fan-out row a new version (see fanoutTouch). A concurrent first result of the same
 * subtask fails on the revision's primary key, and the whole statement with it.
 * Answers the result's `late` flag and the fan-out's orchestrator when written.
 */
export function firstResultInsert(
  row: Omit<ResultRow, 'revision' | 'late'>,
  limits: { claims: number; bytes: number; manifest: number },
  caller: { admin: boolean; orchestratorIds: string[] },
  claimedFacts: string[],
  audit: { at: string; kind: AuditKind; actor: string; data: AuditData },
): Statement<{ late: boolean; orchestrator_id: string }> {
  return named(
    `WITH target AS (
         -- Locks the row, adds the result's parts to its totals (a new version, see fanoutTouch). The limits are
         -- judged on the row as locked, so concurrent first results of other subtasks add up.
         UPDATE fanouts SET claims_total = claims_total + $15, results_bytes = results_bytes + $16,
           manifest_weight = manifest_weight + $17
         WHERE id = $1 AND status = 'open' AND ($8::boolean OR orchestrator_id = ANY($9::text[]))
           AND EXISTS (SELECT 1 FROM jsonb_array_elements(subtasks) AS s(subtask) WHERE s.subtask->>'subtask_id' = $2)
           AND $10::text[] <@ facts
           AND NOT EXISTS (SELECT 1 FROM fanout_results r WHERE r.fanout_id = fanouts.id AND r.subtask_id = $2)
           AND claims_total + $15 <= $18 AND results_bytes + $16 <= $19
           AND manifest_base + manifest_weight + $17 <= $20
         RETURNING id, orchestrator_id, (deadline IS NOT NULL AND $5::timestamptz > deadline) AS late
       ), judged AS (
         SELECT target.* FROM target
       ), created AS (
         INSERT INTO fanout_results (${INSERT_COLUMNS})
         SELECT judged.id, $2, 1, $3, $4, judged.late, $5, $6::jsonb, $7, $15, $16, $17 FROM judged
       ), audit AS (
         ${FIRST_RESULT_AUDIT}
       )
       SELECT late, orchestrator_id FROM judged`,
    [
      row.fanout_id,
      row.subtask_id,
      row.status,
      row.result_digest,
      row.received_at,
      JSON.stringify(row.body),
      row.api_key_id,
      caller.admin,
      caller.orchestratorIds,
      claimedFacts,
      audit.at,
      audit.kind,
      audit.actor,
      JSON.stringify(audit.data),
      row.claim_count,
      row.jcs_bytes,
      row.manifest_weight,
      limits.claims,
      limits.bytes,
      limits.manifest,
    ],
  )
}

/** The latest revision of one subtask's result (without its body), with its parts of the totals, if any. */
export function latestResultOf(
  fanoutId: string,
  subtaskId: string,
): Statement<ResultSummaryRow & ResultParts> {
  return statement(
    `SELECT ${SUMMARY_COLUMNS}, claim_count, jcs_bytes::float8 AS jcs_bytes,
       manifest_weight::float8 AS manifest_weight
     FROM fanout_results WHERE fanout_id = $1 AND subtask_id = $2
     ORDER BY revision DESC LIMIT 1`,
    [fanoutId, subtaskId],
  )
}

/** The latest result of each subtask of one fan-out, with its body (what reconciliation reads). */
export function latestResults(fanoutId: string): Statement<Omit<ResultRow, keyof ResultParts>> {
  return statement(
    `SELECT DISTINCT ON (subtask_id) ${RESULT_COLUMNS} FROM fanout_results WHERE fanout_id = $1
     ORDER BY subtask_id, revision DESC`,
    [fanoutId],
  )
}
