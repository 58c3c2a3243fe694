import { randomUUID } from 'node:crypto'
import { type AuditEntry, appendAuditRecords, auditAppend, auditAppended } from '../../audit-log/append.ts'
import type { Queryable, Transaction } from '../../db/pool.ts'
import { queryFirst, queryRows } from '../../db/statement.ts'
import { checkDecomposition, strictDecompositionErrors } from '../../domain/fanout/decomposition.ts'
import { fanoutManifestBase } from '../../domain/fanout/manifest-bound.ts'
import {
  fanoutLimitBreach,
  type ResultTotals,
  resultLimitBreach,
  resultTotals,
} from '../../domain/fanout/result-limits.ts'
import { type FanoutStatus, withPolicyDefaults } from '../../domain/fanout/vocabulary.ts'
import { breach, LIMITS, type LimitBreach } from '../../domain/limits.ts'
import { canonicalJson, hashJson, type JsonValue, sha256 } from '../../domain/shared/canonical-json.ts'
import { byField } from '../../domain/shared/order.ts'
import { submitInput, writeInput } from '../../engine/case-inputs.ts'
import { AppError, limitExceeded, type ProblemFieldError } from '../../errors.ts'
import { type Page, type PageRequest, readSeqPage } from '../../pagination.ts'
import type { Actor, ServiceContext } from '../../services/context.ts'
import type { Principal } from '../../services/keys.ts'
import { assertMaySpeakFor } from '../../services/keys.ts'
import {
  type FanoutRow,
  type FanoutViewRow,
  fanoutByKey,
  fanoutInsertIfAbsent,
  fanoutLock,
  fanoutTotalsUpdate,
  fanoutView,
  fanoutViewsPage,
  firstResultInsert,
  latestResultOf,
  type NewFanout,
  type ResultParts,
  type ResultRow,
  type ResultSummaryRow,
  resultInsert,
  type StoredSubtask,
} from './repository.ts'
import type { CreateFanoutBody, FanoutResultBody } from './schemas.ts'

/** Problem paths point into the request body, as schema errors do (`body/facts/1`). */
const inBody = (errors: ProblemFieldError[]) =>
  errors.map((error) => ({ ...error, path: `body${error.path}` }))

/**
 * `POST /v1/fanouts`. The caller may speak for `orchestrator_id` (checked by the route). Under a `strict`
 * decomposition, facts no subtask owns and facts two subtasks own are refused (422); otherwise they are reported.
 * `(orchestrator_id, fanout_key)` is the natural key: the same body again answers the existing fan-out.
 */
export async function createFanout(ctx: Pick<ServiceContext, 'db'>, body: CreateFanoutBody, actor: Actor) {
  const policy = withPolicyDefaults(body.policy)
  if (policy.decomposition === 'strict') {
    const errors = strictDecompositionErrors(body.facts, body.subtasks)
    if (errors.length > 0) {
      throw new AppError(
        'UNPROCESSABLE',
        'the decomposition is strict: every fact needs exactly one owning subtask',
        {},
        inBody(errors),
      )
    }
  }
  const subtasks: StoredSubtask[] = body.subtasks.map((subtask) => ({
    subtask_id: subtask.subtask_id,
    scope: subtask.scope ?? null,
    facts: subtask.facts,
  }))
  const deadline = body.deadline ?? null
  // "The same body again" is judged with defaults filled in: spelling out a default is the same body.
  const requestDigest = hashJson({ ...body, deadline, subtasks, policy })
  const decomposition = checkDecomposition(body.facts, body.subtasks)
  const manifestBase = fanoutManifestBase({ ...body, policy, overlaps: decomposition.overlaps })
  if (manifestBase > LIMITS.manifest_bytes) {
    throw limitExceeded(
      breach('manifest_bytes'),
      'the fan-out’s facts, subtasks and policy alone would make its manifest too large',
    )
  }
  const now = new Date()
  const fanout: NewFanout = {
    id: randomUUID(),
    orchestrator_id: body.orchestrator_id,
    fanout_key: body.fanout_key,
    request_digest: requestDigest,
    question: body.question,
    facts: body.facts,
    subtasks,
    deadline: deadline === null ? null : new Date(deadline),
    policy,
    policy_digest: hashJson(policy),
    decomposition,
    created_at: now,
    manifest_base: manifestBase,
  }
  const audit = auditAppend([
    {
      kind: 'fanout.created',
      actor,
      at: now.toISOString(),
      orchestrator_id: fanout.orchestrator_id,
      data: {
        fanout_id: fanout.id,
        fanout_key: fanout.fanout_key,
        facts: fanout.facts,
        subtasks: subtasks.map((subtask) => subtask.subtask_id),
        deadline: fanout.deadline ? fanout.deadline.toISOString() : null,
        policy_digest: fanout.policy_digest,
        decomposition: decomposition as unknown as JsonValue,
        request_digest: requestDigest,
      },
    },
  ])
  // One statement, no transaction: the fan-out and its record, or nothing when the key is taken.
  const row = await queryFirst(ctx.db, fanoutInsertIfAbsent(fanout, audit))
  if (!row) {
    const existing = await queryFirst(ctx.db, fanoutByKey(fanout.orchestrator_id, fanout.fanout_key))
    if (!existing) throw new Error('fan-out natural key conflict without a row')
    if (existing.request_digest !== requestDigest) {
      throw new AppError(
        'CONFLICT',
        `fan-out (${body.orchestrator_id}, ${body.fanout_key}) already exists with a different body`,
        { fanout_id: existing.id },
      )
    }
    return { created: false, fanout: await getFanout(ctx, existing.id) }
  }
  auditAppended(ctx.db)
  return { created: true, fanout: toFanoutView({ ...row, results: [] }) }
}

/** A result's claims, `[]` when its status carries none. */
function claimsOf(body: FanoutResultBody) {
  return 'claims' in body ? (body.claims ?? []) : []
}

/** What a result adds to its fan-out's totals, measured once. */
function totalsOf(body: FanoutResultBody, canonicalText: string): ResultTotals {
  return resultTotals(
    {
      subtask_id: body.subtask_id,
      claims: claimsOf(body),
      blocking_question: 'blocking_question' in body ? body.blocking_question : null,
      blocking_reason: 'blocking_reason' in body ? body.blocking_reason : null,
      concerns: 'concerns' in body ? body.concerns : null,
    },
    canonicalText,
  )
}

/** The fan-out's limits, as the one-statement path judges them. */
const FIRST_RESULT_LIMITS = {
  claims: LIMITS.claims_per_fanout,
  bytes: LIMITS.fanout_results_bytes,
  manifest: LIMITS.manifest_bytes,
}

export type SubmitResultOutcome =
  | { kind: 'created'; result: ResultView }
  /** JCS-equal to the subtask's latest result: that result's answer, nothing new stored. */
  | { kind: 'unchanged'; result: ResultView }
  /** Arrived after the fan-out's final manifest: audited as `result.refused`, nothing else changes (→ 409). */
  | { kind: 'refused'; manifestId: string }

/** Field errors for references the schema cannot judge: the subtask, and the facts claims are about. */
function referenceErrors(fanout: FanoutRow, body: FanoutResultBody): ProblemFieldError[] {
  const errors: ProblemFieldError[] = []
  if (!fanout.subtasks.some((subtask) => subtask.subtask_id === body.subtask_id)) {
    errors.push({ path: 'body/subtask_id', message: 'not a subtask of this fan-out' })
  }
  const facts = new Set(fanout.facts)
  claimsOf(body).forEach((claim, i) => {
    if (!facts.has(claim.fact)) {
      errors.push({ path: `body/claims/${i}/fact`, message: 'not one of the fan-out’s facts' })
    }
  })
  return errors
}

/**
 * `POST /v1/fanouts/{id}/results`: one worker's return. The latest result per subtask counts: the same body
 * again is answered as stored; a different one is the next revision while the fan-out is open, and refused
 * (recorded as `result.refused`) once it is decided, halted or resolved. The row lock orders a result against
 * reconciliation: it either lands before a manifest or sees it.
 */
export async function submitResult(
  ctx: Pick<ServiceContext, 'db'>,
  fanoutId: string,
  body: FanoutResultBody,
  principal: Principal,
): Promise<SubmitResultOutcome> {
  const canonicalText = canonicalJson(body)
  const resultDigest = sha256(canonicalText)
  const totals = totalsOf(body, canonicalText)
  // A result over a limit of its own takes the transaction, which answers 403 before naming the limit.
  const overOwnLimit = resultLimitBreach(claimsOf(body))
  return submitInput(ctx.db, {
    first: overOwnLimit
      ? undefined
      : async (db) => {
          const result = await submitFirstResult(db, fanoutId, body, principal, resultDigest, totals)
          return result && { kind: 'created' as const, result }
        },
    locked: (tx) => submitLockedResult(tx, fanoutId, body, principal, { resultDigest, totals, overOwnLimit }),
  })
}

/** A result the one statement did not take: judged with the fan-out locked. */
async function submitLockedResult(
  tx: Transaction,
  fanoutId: string,
  body: FanoutResultBody,
  principal: Principal,
  {
    resultDigest,
    totals,
    overOwnLimit,
  }: { resultDigest: string; totals: ResultTotals; overOwnLimit: LimitBreach | undefined },
): Promise<SubmitResultOutcome> {
  const fanout = await lockFanout(tx, fanoutId)
  assertMaySpeakFor(principal, fanout.orchestrator_id)
  const errors = referenceErrors(fanout, body)
  if (errors.length > 0) {
    throw new AppError('UNPROCESSABLE', `${errors[0]!.path}: ${errors[0]!.message}`, {}, errors)
  }
  const latest = await queryFirst(tx, latestResultOf(fanoutId, body.subtask_id))
  if (latest && latest.result_digest === resultDigest) {
    return { kind: 'unchanged', result: toResultView(latest) }
  }
  const replaced = assertResultWithinLimits(fanout, body, latest, { totals, overOwnLimit })
  const now = new Date()
  if (fanout.status !== 'open') {
    const manifestId = fanout.manifest_id!
    await appendAuditRecords(tx, [
      {
        kind: 'result.refused',
        actor: principal.keyId,
        at: now.toISOString(),
        manifest_id: manifestId,
        orchestrator_id: fanout.orchestrator_id,
        data: {
          fanout_id: fanoutId,
          subtask_id: body.subtask_id,
          status: body.status,
          result_digest: resultDigest,
          fanout_status: fanout.status,
        },
      },
    ])
    return { kind: 'refused', manifestId }
  }
  const row: ResultRow = {
    fanout_id: fanoutId,
    subtask_id: body.subtask_id,
    revision: (latest?.revision ?? 0) + 1,
    status: body.status,
    body: body as unknown as ResultRow['body'],
    result_digest: resultDigest,
    late: fanout.deadline !== null && now.getTime() > fanout.deadline.getTime(),
    received_at: now,
    api_key_id: principal.keyId,
    claim_count: totals.claims,
    jcs_bytes: totals.bytes,
    manifest_weight: totals.manifest_weight,
  }
  // The revision, the fan-out's new totals (a new version of its row) and the record, in one statement.
  const fanoutTotals = {
    claims: fanout.claims_total - (replaced?.claims ?? 0) + totals.claims,
    bytes: fanout.results_bytes - (replaced?.bytes ?? 0) + totals.bytes,
    manifest_weight: fanout.manifest_weight - (replaced?.manifest_weight ?? 0) + totals.manifest_weight,
  }
  await writeInput(tx, {
    writes: [resultInsert(row)],
    touch: fanoutTotalsUpdate(fanoutId, fanoutTotals),
    audit: [resultRecorded(row, fanout.orchestrator_id, principal)],
  })
  return { kind: 'created', result: toResultView(row) }
}

/**
 * The limits a result is held to under the fan-out's lock (docs/limits.md): its own, the subtask's results, and the
 * fan-out's totals with this result in place of the subtask's latest. Returns the latest's part of the totals
 * (null when the subtask has none), which this result replaces.
 */
function assertResultWithinLimits(
  fanout: FanoutRow,
  body: FanoutResultBody,
  latest: (ResultSummaryRow & ResultParts) | undefined,
  { totals, overOwnLimit }: { totals: ResultTotals; overOwnLimit: LimitBreach | undefined },
): ResultTotals | null {
  if (overOwnLimit) throw limitExceeded(overOwnLimit, 'this result is over a limit of one result')
  if (latest && latest.revision >= LIMITS.results_per_subtask) {
    throw limitExceeded(
      breach('results_per_subtask', latest.revision + 1),
      `subtask ${body.subtask_id} already has ${latest.revision} results`,
    )
  }
  const replaced: ResultTotals | null = latest
    ? { claims: latest.claim_count, bytes: latest.jcs_bytes, manifest_weight: latest.manifest_weight }
    : null
  const overFanoutLimit = fanoutLimitBreach(
    {
      claims: fanout.claims_total,
      bytes: fanout.results_bytes,
      manifest_weight: fanout.manifest_weight,
      manifest_base: fanout.manifest_base,
    },
    totals,
    replaced,
  )
  if (overFanoutLimit) {
    throw limitExceeded(
      overFanoutLimit,
      overFanoutLimit.limit === 'manifest_bytes'
        ? 'with this result, the fan-out’s next manifest could pass the size a manifest may have'
        : 'with this result, the latest results of the fan-out together would pass a limit',
    )
  }
  return replaced
}

/**
 * A subtask's first result on an open fan-out, from a caller who may write to it, in one statement (most results
 * are). Undefined when nothing was written: the transaction of submitResult then answers whatever else it is (a
 * revision, a resend, a refusal, a 403 or 422, an unknown fan-out).
 */
async function submitFirstResult(
  db: Queryable,
  fanoutId: string,
  body: FanoutResultBody,
  principal: Principal,
  resultDigest: string,
  totals: ResultTotals,
): Promise<ResultView | undefined> {
  const now = new Date()
  const row = {
    fanout_id: fanoutId,
    subtask_id: body.subtask_id,
    status: body.status,
    body: body as unknown as ResultRow['body'],
    result_digest: resultDigest,
    received_at: now,
    api_key_id: principal.keyId,
    claim_count: totals.claims,
    jcs_bytes: totals.bytes,
    manifest_weight: totals.manifest_weight,
  }
  const claims = claimsOf(body)
  const written = await queryFirst(
    db,
    firstResultInsert(
      row,
      FIRST_RESULT_LIMITS,
      {
        admin: principal.role === 'admin',
        orchestratorIds: principal.role === 'orchestrator' ? principal.orchestratorIds : [],
      },
      claims.map((claim) => claim.fact),
      // resultRecorded's entry: the statement adds `late` and the orchestrator, from the fan-out row.
      {
        at: now.toISOString(),
        kind: 'result.recorded',
        actor: principal.keyId,
        data: {
          fanout_id: fanoutId,
          subtask_id: row.subtask_id,
          revision: 1,
          status: row.status,
          result_digest: resultDigest,
        },
      },
    ),
  )
  if (!written) return undefined
  return toResultView({ ...row, revision: 1, late: written.late })
}

function resultRecorded(row: ResultRow, orchestratorId: string, principal: Principal): AuditEntry {
  return {
    kind: 'result.recorded',
    actor: principal.keyId,
    at: row.received_at.toISOString(),
    orchestrator_id: orchestratorId,
    data: {
      fanout_id: row.fanout_id,
      subtask_id: row.subtask_id,
      revision: row.revision,
      status: row.status,
      late: row.late,
      result_digest: row.result_digest,
    },
  }
}

/** GET /v1/fanouts/{id}, in one statement. */
export async function getFanout(ctx: Pick<ServiceContext, 'db'>, fanoutId: string) {
  const fanout = await queryFirst(ctx.db, fanoutView(fanoutId))
  if (!fanout) throw new AppError('NOT_FOUND', `no fan-out ${fanoutId}`)
  return toFanoutView(fanout)
}

/** GET /v1/fanouts: oldest first, each page in one statement. */
export async function pageFanouts(
  ctx: Pick<ServiceContext, 'db'>,
  filter: { orchestratorId?: string | undefined; status?: FanoutStatus | undefined },
  page: PageRequest,
): Promise<Page<FanoutView>> {
  return readSeqPage(
    page,
    (afterSeq, limit) => queryRows(ctx.db, fanoutViewsPage({ ...filter, afterSeq }, limit)),
    (row) => row.list_seq,
    toFanoutView,
  )
}

async function lockFanout(tx: Queryable, fanoutId: string): Promise<FanoutRow> {
  const fanout = await queryFirst(tx, fanoutLock(fanoutId))
  if (!fanout) throw new AppError('NOT_FOUND', `no fan-out ${fanoutId}`)
  return fanout
}

/** A result as answers and fan-out views show it (no body: that is the worker's, and the manifest's claims). */
function toResultView(row: ResultSummaryRow) {
  return {
    fanout_id: row.fanout_id,
    subtask_id: row.subtask_id,
    revision: row.revision,
    status: row.status,
    late: row.late,
    result_digest: row.result_digest,
    received_at: row.received_at.toISOString(),
  }
}

export type ResultView = ReturnType<typeof toResultView>

function toFanoutView(row: FanoutViewRow) {
  return {
    fanout_id: row.id,
    orchestrator_id: row.orchestrator_id,
    fanout_key: row.fanout_key,
    question: row.question,
    facts: row.facts,
    subtasks: row.subtasks,
    deadline: row.deadline ? row.deadline.toISOString() : null,
    policy: row.policy,
    policy_digest: row.policy_digest,
    decomposition: row.decomposition,
    status: row.status,
    // As toResultView shows them, less the fan-out's id.
    results: row.results
      .map((result) => ({
        subtask_id: result.subtask_id,
        revision: result.revision,
        status: result.status,
        late: result.late,
        result_digest: result.result_digest,
        received_at: result.received_at,
      }))
      .sort(byField('subtask_id')),
    manifest_id: row.manifest_id,
    created_at: row.created_at.toISOString(),
  }
}

export type FanoutView = ReturnType<typeof toFanoutView>
