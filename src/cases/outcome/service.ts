import { randomUUID } from 'node:crypto'
import { appendAuditRecords, auditAppend, auditAppended } from '../../audit-log/append.ts'
import type { Queryable } from '../../db/pool.ts'
import { type Transaction, withTransaction } from '../../db/pool.ts'
import { probeById } from '../../db/repositories/probes.ts'
import { queryFirst, runStatement } from '../../db/statement.ts'
import { breach, LIMITS, utf8Length } from '../../domain/limits.ts'
import {
  type EvidenceItem,
  evidenceHash,
  firstOccurrences,
  type HashedEvidenceItem,
  hashEvidence,
} from '../../domain/outcome/evidence.ts'
import { type IntendedAction, toManifestInterpretation } from '../../domain/outcome/interpretation.ts'
import {
  type BoundOutcome,
  firstInterpretationGrowth,
  type OutcomeBoundState,
  outcomeBoundState,
  outcomeManifestBound,
} from '../../domain/outcome/manifest-bound.ts'
import {
  type OutcomeRules,
  outcomeBodyFingerprint,
  outcomeRules,
  sameOutcomeBody,
} from '../../domain/outcome/subagent-policy.ts'
import { acceptsInputs } from '../../domain/outcome/transitions.ts'
import type { FallbackPolicy, OutcomeReading, OutcomeStatus } from '../../domain/outcome/vocabulary.ts'
import { canonicalJson, hashJson, type JsonValue, sha256 } from '../../domain/shared/canonical-json.ts'
import { byField, sortedUnique } from '../../domain/shared/order.ts'
import { submitInput, writeInput } from '../../engine/case-inputs.ts'
import { AppError, limitExceeded } from '../../errors.ts'
import { type Page, type PageRequest, readSeqPage } from '../../pagination.ts'
import type { Actor, ServiceContext } from '../../services/context.ts'
import type { Principal } from '../../services/keys.ts'
import {
  evidenceVersionSizes,
  findOutcome,
  findOutcomeByKey,
  findOutcomeView,
  type InterpretationRow,
  insertDissent,
  insertEvidenceItems,
  insertEvidenceVersion,
  insertFirstInterpretation,
  insertNewOutcome,
  insertOutcomeIfAbsent,
  interpretationInsert,
  latestInterpretationBounds,
  latestInterpretationOf,
  listEvidenceVersions,
  listOutcomeViews,
  type NewOutcome as NewOutcomeRow,
  type OutcomeRow,
  type OutcomeViewRow,
  outcomeBoundUpdate,
  updateOutcomeEvidenceHash,
} from './repository.ts'
import { findSubagentPolicy, type SubagentPolicyRow } from './subagent-policy-repository.ts'

/** `POST /v1/outcomes`: a sub-agent result, its evidence, and how it will be decided. */
export interface NewOutcome {
  subagent_id: string
  run_id: string
  evidence: EvidenceItem[]
  expected_orchestrators?: string[] | undefined
  deadline?: string | undefined
  arbiter_orchestrator_id?: string | undefined
  /** `probe_id` may be left out when the sub-agent's policy names the probe. */
  probe?: { probe_id?: string | undefined; params?: Record<string, JsonValue> | undefined } | undefined
  fallback_policy?: FallbackPolicy | undefined
}

/** `POST /v1/outcomes/{id}/interpretations`: one orchestrator's judgement of the outcome. */
export interface InterpretationSubmission {
  orchestrator_id: string
  /** Exactly one of the criterion document and its opaque hash. */
  success_criterion?: JsonValue | undefined
  success_criterion_hash?: string | undefined
  outcome_interpretation: OutcomeReading
  /** The evidence version judged; defaults to the current one. */
  evidence_hash?: string | undefined
  intended_action?: IntendedAction | undefined
  rationale?: string | undefined
}

/** The limits a new outcome's body is held to: its orchestrators and its evidence items. */
function assertOutcomeWithinLimits(body: NewOutcome, itemHashes: readonly string[]): void {
  const expected = new Set(body.expected_orchestrators ?? [])
  if (expected.size > LIMITS.orchestrators_per_outcome) {
    throw limitExceeded(
      breach('orchestrators_per_outcome', expected.size, 'body/expected_orchestrators'),
      'too many expected orchestrators',
    )
  }
  assertEvidenceWithinLimit(itemHashes.length, 'body/evidence')
}

function assertEvidenceWithinLimit(items: number, path: string): void {
  if (items > LIMITS.evidence_items_per_outcome) {
    throw limitExceeded(
      breach('evidence_items_per_outcome', items, path),
      'the outcome’s evidence items, counted in every version that lists them, would be too many',
    )
  }
}

export async function createOutcome(ctx: Pick<ServiceContext, 'db'>, body: NewOutcome, actor: Actor) {
  const hashed = hashEvidence(body.evidence)
  const itemHashes = sortedUnique(hashed.map((h) => h.item_hash))
  assertOutcomeWithinLimits(body, itemHashes)
  const currentEvidenceHash = evidenceHash(itemHashes)
  const evidence = { hashed, itemHashes, evidenceHash: currentEvidenceHash }
  const now = new Date()
  // Most outcomes are new, of a sub-agent without a policy, with no probe to check: one statement writes them
  // (it writes nothing when the key exists or a policy appeared, and the path below reads both).
  const bodyRules = body.probe ? null : outcomeRules(body, null, now.getTime())
  if (bodyRules?.ok) {
    const created = newOutcome(body, bodyRules.rules, null, evidence, now, actor)
    if (await insertNewOutcome(ctx.db, created.row, created.evidence, created.audit)) {
      auditAppended(ctx.db)
      return { created: true, outcome: created.view }
    }
  }
  return withTransaction(ctx.db, async (tx) => {
    // An outcome that exists is judged against what it was created with, whatever its sub-agent's policy is now:
    // the same body again is 200 even after the policy changed, and the policy's 422s are for new outcomes only.
    const existing = await findOutcomeByKey(tx, body.subagent_id, body.run_id)
    if (existing) return { created: false, outcome: await existingOutcome(tx, existing, body) }
    // Read in the transaction that creates the outcome: the outcome is created under the policy it was checked
    // against, and keeps it whatever happens to the policy afterwards.
    const policy = (await findSubagentPolicy(tx, body.subagent_id)) ?? null
    const decided = outcomeRules(body, policy, now.getTime())
    if (!decided.ok) {
      throw new AppError(
        'UNPROCESSABLE',
        policy
          ? `sub-agent ${body.subagent_id} has a policy: its outcomes take ${decided.errors.map((e) => e.path.slice(1)).join(', ')} from it`
          : decided.errors[0]!.message,
        {},
        decided.errors.map((error) => ({ ...error, path: `body${error.path}` })),
      )
    }
    const rules = decided.rules
    if (rules.probe && !(await queryFirst(tx, probeById(rules.probe.probe_id)))) {
      throw new AppError('UNPROCESSABLE', `probe ${rules.probe.probe_id} is not registered`, {}, [
        { path: 'body/probe/probe_id', message: 'unknown probe' },
      ])
    }
    const created = newOutcome(body, rules, policy, evidence, now, actor)
    const { row, inserted } = await insertOutcomeIfAbsent(tx, created.row)
    // Lost a race with a concurrent create of the same key: judged like any resend.
    if (!inserted) return { created: false, outcome: await existingOutcome(tx, row, body) }
    await insertEvidenceItems(tx, row.id, created.evidence.items)
    await insertEvidenceVersion(tx, row.id, {
      evidence_hash: currentEvidenceHash,
      item_hashes: itemHashes,
      created_at: now,
    })
    await runStatement(tx, created.audit)
    auditAppended(tx)
    return { created: true, outcome: created.view }
  })
}

/** A new outcome under `rules`: its row, its evidence, its `outcome.created` record and the view answered. */
function newOutcome(
  body: NewOutcome,
  rules: OutcomeRules,
  policy: SubagentPolicyRow | null,
  evidence: { hashed: HashedEvidenceItem[]; itemHashes: string[]; evidenceHash: string },
  now: Date,
  actor: Actor,
) {
  // "The same body again" is judged with defaults filled in (the policy's, under a sub-agent policy).
  const requestDigest = outcomeBodyFingerprint(
    body,
    policy ? { ...rules, probe_id: rules.probe?.probe_id ?? null } : null,
  )
  const row: NewOutcomeRow = {
    id: randomUUID(),
    subagent_id: body.subagent_id,
    run_id: body.run_id,
    request_digest: requestDigest,
    expected_orchestrators: rules.expected_orchestrators,
    deadline: rules.deadline === null ? null : new Date(rules.deadline),
    arbiter_orchestrator_id: rules.arbiter_orchestrator_id,
    probe_id: rules.probe?.probe_id ?? null,
    probe_params: rules.probe?.params ?? null,
    fallback_policy: rules.fallback_policy,
    evidence_hash: evidence.evidenceHash,
    created_at: now,
    manifest_bound: outcomeManifestBound(
      boundOutcome({
        subagent_id: body.subagent_id,
        run_id: body.run_id,
        expected_orchestrators: rules.expected_orchestrators,
        probe_id: rules.probe?.probe_id ?? null,
        probe_params: rules.probe?.params ?? null,
      }),
      [],
    ),
    evidence_items: evidence.itemHashes.length,
  }
  const items = firstOccurrences(evidence.hashed)
  // A new outcome's view is known without reading it back: its one evidence version, its items, nothing else.
  const view = toOutcomeView({
    ...row,
    list_seq: 0,
    status: 'open',
    manifest_id: null,
    reevaluation_rounds: 0,
    evidence_versions: [
      {
        evidence_hash: evidence.evidenceHash,
        item_hashes: evidence.itemHashes,
        created_at: now.toISOString(),
      },
    ],
    evidence: items.map((h) => h.item),
    interpretations: [],
  })
  const audit = auditAppend([
    {
      kind: 'outcome.created',
      actor,
      at: now.toISOString(),
      outcome_id: row.id,
      subagent_id: row.subagent_id,
      data: {
        run_id: row.run_id,
        evidence_hash: evidence.evidenceHash,
        item_hashes: evidence.itemHashes,
        expected_orchestrators: row.expected_orchestrators,
        deadline: row.deadline ? row.deadline.toISOString() : null,
        arbiter_orchestrator_id: row.arbiter_orchestrator_id,
        probe_id: row.probe_id,
        fallback_policy: row.fallback_policy,
        // The sub-agent policy these rules were copied from (its `policy.set` time), or null: the body set them.
        policy_updated_at: policy ? policy.updated_at.toISOString() : null,
        request_digest: requestDigest,
      },
    },
  ])
  return { row, evidence: { items, item_hashes: evidence.itemHashes }, view, audit }
}

/** The existing outcome under `body`'s natural key, if `body` is the one it was created from; else 409. */
async function existingOutcome(tx: Queryable, row: OutcomeRow, body: NewOutcome) {
  if (!sameOutcomeBody(body, row)) {
    throw new AppError(
      'CONFLICT',
      `outcome (${body.subagent_id}, ${body.run_id}) already exists with a different body`,
      { outcome_id: row.id },
    )
  }
  return loadOutcomeView(tx, row.id)
}

/** Adds items; the new evidence_hash covers the union of all items so far (earlier hashes stay valid). */
export async function appendEvidence(
  ctx: Pick<ServiceContext, 'db'>,
  outcomeId: string,
  items: EvidenceItem[],
  actor: Actor,
) {
  const hashed = hashEvidence(items)
  return withTransaction(ctx.db, async (tx) => {
    const outcome = await lockOutcome(tx, outcomeId)
    if (!acceptsInputs(outcome.status)) {
      throw new AppError(
        'CONFLICT',
        `outcome ${outcomeId} is already decided; evidence can no longer change`,
        { manifest_id: outcome.manifest_id },
      )
    }
    const versions = await listEvidenceVersions(tx, [outcomeId])
    const current = versions.find((v) => v.evidence_hash === outcome.evidence_hash)
    const itemHashes = sortedUnique([...(current?.item_hashes ?? []), ...hashed.map((h) => h.item_hash)])
    const newEvidenceHash = evidenceHash(itemHashes)
    if (newEvidenceHash === outcome.evidence_hash) {
      return { created: false, outcome: await loadOutcomeView(tx, outcomeId) }
    }
    // Each version lists every item it holds, and the outcome's view lists every version: the items are counted
    // over all versions together, so many small appends cannot make the view (and each append's read) grow
    // with the square of the items.
    const listedBefore = versions.reduce((listed, version) => listed + version.item_hashes.length, 0)
    assertEvidenceWithinLimit(listedBefore + itemHashes.length, 'body/evidence')
    const now = new Date()
    const known = new Set(current?.item_hashes ?? [])
    const added = firstOccurrences(hashed.filter((h) => !known.has(h.item_hash)))
    await insertEvidenceItems(tx, outcomeId, added)
    await insertEvidenceVersion(tx, outcomeId, {
      evidence_hash: newEvidenceHash,
      item_hashes: itemHashes,
      created_at: now,
    })
    await updateOutcomeEvidenceHash(tx, outcomeId, newEvidenceHash, itemHashes.length)
    const view = await loadOutcomeView(tx, outcomeId)
    await appendAuditRecords(tx, [
      {
        kind: 'evidence.appended',
        actor,
        at: now.toISOString(),
        outcome_id: outcomeId,
        subagent_id: outcome.subagent_id,
        data: {
          evidence_hash: newEvidenceHash,
          previous_evidence_hash: outcome.evidence_hash,
          added_item_hashes: sortedUnique(added.map((a) => a.item_hash)),
        },
      },
    ])
    return { created: true, outcome: view }
  })
}

export type SubmitResult =
  | { kind: 'created'; interpretation: InterpretationView }
  | { kind: 'unchanged'; interpretation: InterpretationView }
  /** Arrived after a final decision: stored and audited as dissent, the decision stands (→ 409). */
  | { kind: 'dissent'; manifestId: string }

/** What makes two submissions "exactly" the same: resubmitting the latest one is a no-op. */
function submissionFingerprint(s: {
  signature: string
  hasCriterion: boolean
  reading: string
  evidenceHash: string
  intendedAction: unknown
  rationale: string | null
}): string {
  return hashJson({
    signature: s.signature,
    has_criterion: s.hasCriterion,
    reading: s.reading,
    evidence_hash: s.evidenceHash,
    intended_action: s.intendedAction ?? null,
    rationale: s.rationale,
  })
}

function rowFingerprint(row: InterpretationRow): string {
  return submissionFingerprint({
    signature: row.success_criterion_signature,
    hasCriterion: row.has_criterion,
    reading: row.outcome_interpretation,
    evidenceHash: row.evidence_hash,
    intendedAction: row.intended_action,
    rationale: row.rationale,
  })
}

export async function submitInterpretation(
  ctx: Pick<ServiceContext, 'db'>,
  outcomeId: string,
  body: InterpretationSubmission,
  principal: Principal,
): Promise<SubmitResult> {
  const hasCriterion = body.success_criterion !== undefined
  const criterionText = hasCriterion ? canonicalJson(body.success_criterion) : undefined
  const signature = criterionText !== undefined ? sha256(criterionText) : body.success_criterion_hash!
  const criterionTooLarge =
    criterionText !== undefined && utf8Length(criterionText) > LIMITS.success_criterion_bytes
  // A criterion over its limit takes the transaction, which answers 404 and 403 before naming the limit.
  return submitInput(ctx.db, {
    first: criterionTooLarge
      ? undefined
      : async (db) => {
          const interpretation = await submitFirstInterpretation(db, outcomeId, body, principal, signature)
          return interpretation && { kind: 'created' as const, interpretation }
        },
    locked: (tx) => submitLockedInterpretation(tx, outcomeId, body, principal, { criterionText, signature }),
  })
}

/**
 * An interpretation the one statement did not take: the orchestrators of the outcome and the bound on its next
 * manifest are judged over every orchestrator's latest interpretation, under the outcome's row lock.
 */
async function submitLockedInterpretation(
  tx: Transaction,
  outcomeId: string,
  body: InterpretationSubmission,
  principal: Principal,
  { criterionText, signature }: { criterionText: string | undefined; signature: string },
): Promise<SubmitResult> {
  const hasCriterion = body.success_criterion !== undefined
  // The row lock orders this submission against evaluation: a revision either lands before a decision or
  // sees it and becomes dissent.
  const outcome = await lockOutcome(tx, outcomeId)
  const judged = body.evidence_hash ?? outcome.evidence_hash
  const versions = await evidenceVersionSizes(tx, outcomeId)
  const judgedVersion = versions.find((v) => v.evidence_hash === judged)
  if (!judgedVersion) {
    throw new AppError(
      'UNPROCESSABLE',
      `evidence_hash ${judged} is not a version of this outcome's evidence`,
      {},
      [{ path: 'body/evidence_hash', message: 'unknown evidence version' }],
    )
  }
  const latest = await latestInterpretationOf(tx, outcomeId, body.orchestrator_id)
  const fingerprint = submissionFingerprint({
    signature,
    hasCriterion,
    reading: body.outcome_interpretation,
    evidenceHash: judged,
    intendedAction: body.intended_action,
    rationale: body.rationale ?? null,
  })
  if (latest && rowFingerprint(latest) === fingerprint) {
    return { kind: 'unchanged', interpretation: toInterpretationView(latest) }
  }
  const boundState = await assertInterpretationWithinLimits(tx, outcome, body, {
    criterionText,
    signature,
    judged: { evidence_hash: judged, items: judgedVersion.items },
    latestRevision: latest?.revision ?? 0,
  })
  const now = new Date()
  if (!acceptsInputs(outcome.status)) {
    const manifestId = outcome.manifest_id!
    const submission = { ...body, evidence_hash: judged } as unknown as JsonValue
    await insertDissent(tx, {
      id: randomUUID(),
      outcome_id: outcomeId,
      orchestrator_id: body.orchestrator_id,
      manifest_id: manifestId,
      submission,
      received_at: now,
      api_key_id: principal.keyId,
    })
    await appendAuditRecords(tx, [
      {
        kind: 'dissent.recorded',
        actor: principal.keyId,
        at: now.toISOString(),
        outcome_id: outcomeId,
        manifest_id: manifestId,
        subagent_id: outcome.subagent_id,
        orchestrator_id: body.orchestrator_id,
        data: {
          success_criterion_signature: signature,
          outcome_interpretation: body.outcome_interpretation,
          evidence_hash: judged,
          intended_action: body.intended_action ?? null,
          rationale: body.rationale ?? null,
        },
      },
    ])
    return { kind: 'dissent', manifestId }
  }
  const row: InterpretationRow = {
    id: randomUUID(),
    outcome_id: outcomeId,
    orchestrator_id: body.orchestrator_id,
    revision: (latest?.revision ?? 0) + 1,
    has_criterion: hasCriterion,
    success_criterion: hasCriterion ? (body.success_criterion ?? null) : null,
    success_criterion_signature: signature,
    outcome_interpretation: body.outcome_interpretation,
    evidence_hash: judged,
    intended_action: body.intended_action ?? null,
    rationale: body.rationale ?? null,
    received_at: now,
    api_key_id: principal.keyId,
  }
  // The revision, a new version of the outcome row with the exact state the one-statement path judges first
  // interpretations against, and the record, in one statement.
  await writeInput(tx, {
    writes: [interpretationInsert(row)],
    touch: outcomeBoundUpdate(outcomeId, boundState),
    audit: [
      {
        kind: 'interpretation.recorded',
        actor: principal.keyId,
        at: now.toISOString(),
        outcome_id: outcomeId,
        subagent_id: outcome.subagent_id,
        orchestrator_id: row.orchestrator_id,
        data: {
          interpretation_id: row.id,
          revision: row.revision,
          success_criterion_signature: signature,
          outcome_interpretation: row.outcome_interpretation,
          evidence_hash: judged,
          intended_action: row.intended_action,
        },
      },
    ],
  })
  return { kind: 'created', interpretation: toInterpretationView(row) }
}

/**
 * The limits an interpretation is held to when it arrives (docs/limits.md): its criterion's size, the
 * orchestrator's revisions, the outcome's orchestrators, and the bound on the outcome's next manifest with this
 * interpretation in place of the orchestrator's latest.
 */
async function assertInterpretationWithinLimits(
  tx: Queryable,
  outcome: OutcomeRow,
  body: InterpretationSubmission,
  submitted: {
    criterionText: string | undefined
    signature: string
    judged: { evidence_hash: string; items: number }
    latestRevision: number
  },
): Promise<OutcomeBoundState> {
  if (submitted.criterionText !== undefined) {
    const bytes = utf8Length(submitted.criterionText)
    if (bytes > LIMITS.success_criterion_bytes) {
      throw limitExceeded(
        breach('success_criterion_bytes', bytes, 'body/success_criterion'),
        'the success criterion is too large',
      )
    }
  }
  if (submitted.latestRevision >= LIMITS.revisions_per_orchestrator) {
    throw limitExceeded(
      breach('revisions_per_orchestrator', submitted.latestRevision + 1),
      `orchestrator ${body.orchestrator_id} has already submitted ${submitted.latestRevision} revisions`,
    )
  }
  const others = (await latestInterpretationBounds(tx, outcome.id)).filter(
    (row) => row.orchestrator_id !== body.orchestrator_id,
  )
  const orchestrators = new Set([
    ...outcome.expected_orchestrators,
    ...others.map((row) => row.orchestrator_id),
    body.orchestrator_id,
  ])
  if (orchestrators.size > LIMITS.orchestrators_per_outcome) {
    throw limitExceeded(
      breach('orchestrators_per_outcome', orchestrators.size, 'body/orchestrator_id'),
      'the outcome already has as many orchestrators (expected and interpreting) as it may',
    )
  }
  const state = outcomeBoundState(boundOutcome(outcome), [
    ...others.map((row) => ({
      orchestrator_id: row.orchestrator_id,
      success_criterion_signature: row.success_criterion_signature,
      success_criterion: row.has_criterion ? (row.success_criterion ?? null) : undefined,
      intended_action: row.intended_action as JsonValue | null,
      evidence_items: row.evidence_items,
      evidence_hash: row.evidence_hash,
    })),
    {
      orchestrator_id: body.orchestrator_id,
      success_criterion_signature: submitted.signature,
      success_criterion: body.success_criterion,
      intended_action: (body.intended_action ?? null) as JsonValue | null,
      evidence_items: submitted.judged.items,
      evidence_hash: submitted.judged.evidence_hash,
    },
  ])
  if (state.manifest_bound > LIMITS.manifest_bytes) {
    throw limitExceeded(
      breach('manifest_bytes'),
      'with this interpretation, the outcome’s next manifest could pass the size a manifest may have',
    )
  }
  return state
}

/** The outcome's own part of the bound on its manifests. */
function boundOutcome(outcome: {
  subagent_id: string
  run_id: string
  expected_orchestrators: readonly string[]
  probe_id: string | null
  probe_params: Record<string, JsonValue> | null
}): BoundOutcome {
  return {
    subagent_id: outcome.subagent_id,
    run_id: outcome.run_id,
    expected_orchestrators: outcome.expected_orchestrators,
    probe_params: outcome.probe_id === null ? null : (outcome.probe_params ?? {}),
  }
}

/**
 * An orchestrator's first interpretation of an open outcome, in one statement (most submissions are). Undefined
 * when that statement wrote nothing: the transaction of submitInterpretation then answers whatever else it is
 * (a revision, a resend, dissent, an unknown outcome or evidence version, a limit).
 */
async function submitFirstInterpretation(
  db: Queryable,
  outcomeId: string,
  body: InterpretationSubmission,
  principal: Principal,
  signature: string,
): Promise<InterpretationView | undefined> {
  const hasCriterion = body.success_criterion !== undefined
  const now = new Date()
  const row = {
    id: randomUUID(),
    outcome_id: outcomeId,
    orchestrator_id: body.orchestrator_id,
    has_criterion: hasCriterion,
    success_criterion: hasCriterion ? (body.success_criterion ?? null) : null,
    success_criterion_signature: signature,
    outcome_interpretation: body.outcome_interpretation,
    evidence_hash: body.evidence_hash ?? null,
    intended_action: body.intended_action ?? null,
    rationale: body.rationale ?? null,
    received_at: now,
    api_key_id: principal.keyId,
  }
  const growth = firstInterpretationGrowth({
    orchestrator_id: body.orchestrator_id,
    success_criterion: body.success_criterion,
    intended_action: (body.intended_action ?? null) as JsonValue | null,
  })
  const written = await insertFirstInterpretation(
    db,
    row,
    {
      at: now.toISOString(),
      kind: 'interpretation.recorded',
      actor: principal.keyId,
      // The statement adds the evidence_hash judged.
      data: {
        interpretation_id: row.id,
        revision: 1,
        success_criterion_signature: signature,
        outcome_interpretation: row.outcome_interpretation,
        intended_action: row.intended_action,
      },
    },
    growth,
    { orchestrators: LIMITS.orchestrators_per_outcome, manifest: LIMITS.manifest_bytes },
  )
  if (!written) return undefined
  return toInterpretationView({ ...row, revision: 1, evidence_hash: written.evidence_hash })
}

/** GET /v1/outcomes/{id}, in one statement. */
export async function getOutcome(ctx: Pick<ServiceContext, 'db'>, outcomeId: string) {
  const outcome = await findOutcomeView(ctx.db, outcomeId)
  if (!outcome) throw new AppError('NOT_FOUND', `no outcome ${outcomeId}`)
  return toOutcomeView(outcome)
}

/** GET /v1/outcomes: oldest first, each page in one statement. */
export async function pageOutcomes(
  ctx: Pick<ServiceContext, 'db'>,
  filter: { subagentId?: string | undefined; status?: OutcomeStatus | undefined },
  page: PageRequest,
): Promise<Page<OutcomeView>> {
  const result = await readSeqPage(
    page,
    (afterSeq, limit) => listOutcomeViews(ctx.db, { ...filter, afterSeq }, limit),
    (row) => row.list_seq,
    toOutcomeView,
  )
  return result
}

async function lockOutcome(tx: Queryable, outcomeId: string): Promise<OutcomeRow> {
  const outcome = await findOutcome(tx, outcomeId, { lock: true })
  if (!outcome) throw new AppError('NOT_FOUND', `no outcome ${outcomeId}`)
  return outcome
}

/** The outcome as shown, read again after a change in `tx` (which it sees). */
async function loadOutcomeView(tx: Queryable, outcomeId: string) {
  const view = await findOutcomeView(tx, outcomeId)
  if (!view) throw new Error(`outcome ${outcomeId} vanished inside its own transaction`)
  return toOutcomeView(view)
}

/** An interpretation as the API shows it: the manifest's fields plus its id. */
function toInterpretationView(row: InterpretationRow) {
  return {
    interpretation_id: row.id,
    ...toManifestInterpretation({ ...row, received_at: row.received_at.toISOString() }),
  }
}

export type InterpretationView = ReturnType<typeof toInterpretationView>

function toOutcomeView(row: OutcomeViewRow) {
  return {
    outcome_id: row.id,
    subagent_id: row.subagent_id,
    run_id: row.run_id,
    status: row.status,
    evidence_hash: row.evidence_hash,
    evidence_versions: row.evidence_versions,
    evidence: row.evidence,
    interpretations: row.interpretations.map(toManifestInterpretation).sort(byField('orchestrator_id')),
    expected_orchestrators: row.expected_orchestrators,
    deadline: row.deadline ? row.deadline.toISOString() : null,
    arbiter_orchestrator_id: row.arbiter_orchestrator_id,
    probe: row.probe_id ? { probe_id: row.probe_id, params: row.probe_params ?? {} } : null,
    fallback_policy: row.fallback_policy,
    manifest_id: row.manifest_id,
    reevaluation_rounds: row.reevaluation_rounds,
    created_at: row.created_at.toISOString(),
  }
}

export type OutcomeView = ReturnType<typeof toOutcomeView>
