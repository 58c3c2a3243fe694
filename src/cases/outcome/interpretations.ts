import { randomUUID } from 'node:crypto'
import { appendAuditRecords } from '../../audit-log/append.ts'
import type { Queryable, Transaction } from '../../db/pool.ts'
import { queryFirst, queryRows, runStatement } from '../../db/statement.ts'
import { breach, LIMITS, utf8Length } from '../../domain/limits.ts'
import type { IntendedAction } from '../../domain/outcome/interpretation.ts'
import {
  firstInterpretationGrowth,
  type OutcomeBoundState,
  outcomeBoundState,
} from '../../domain/outcome/manifest-bound.ts'
import { acceptsInputs } from '../../domain/outcome/transitions.ts'
import type { OutcomeReading } from '../../domain/outcome/vocabulary.ts'
import { canonicalJson, hashJson, type JsonValue, sha256 } from '../../domain/shared/canonical-json.ts'
import { submitInput, writeInput } from '../../engine/case-inputs.ts'
import { AppError, limitExceeded } from '../../errors.ts'
import type { ServiceContext } from '../../services/context.ts'
import type { Principal } from '../../services/keys.ts'
import { boundOutcome } from './creation.ts'
import { evidenceVersionSizes } from './evidence-repository.ts'
import {
  dissentInsert,
  firstInterpretationInsert,
  type InterpretationRow,
  interpretationInsert,
  latestInterpretationBounds,
  latestInterpretationOf,
} from './interpretation-repository.ts'
import { type OutcomeRow, outcomeBoundUpdate } from './repository.ts'
import { type InterpretationView, lockOutcome, toInterpretationView } from './views.ts'

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
  // The row lock orders this submission against evaluation: a revision either lands before a decision or
  // sees it and becomes dissent.
  const outcome = await lockOutcome(tx, outcomeId)
  const judged = await judgedEvidence(tx, outcome, body.evidence_hash)
  const latest = await queryFirst(tx, latestInterpretationOf(outcomeId, body.orchestrator_id))
  const fingerprint = submissionFingerprint({
    signature,
    hasCriterion: body.success_criterion !== undefined,
    reading: body.outcome_interpretation,
    evidenceHash: judged.evidence_hash,
    intendedAction: body.intended_action,
    rationale: body.rationale ?? null,
  })
  if (latest && rowFingerprint(latest) === fingerprint) {
    return { kind: 'unchanged', interpretation: toInterpretationView(latest) }
  }
  const boundState = await assertInterpretationWithinLimits(tx, outcome, body, {
    criterionText,
    signature,
    judged,
    latestRevision: latest?.revision ?? 0,
  })
  const submitted = { body, principal, signature, judged: judged.evidence_hash, now: new Date() }
  if (!acceptsInputs(outcome.status)) {
    return { kind: 'dissent', manifestId: await recordDissent(tx, outcome, submitted) }
  }
  const revision = (latest?.revision ?? 0) + 1
  const row = await recordRevision(tx, outcome, submitted, revision, boundState)
  return { kind: 'created', interpretation: toInterpretationView(row) }
}

/**
 * The evidence version an interpretation judges (the outcome's current one unless named) and its items; 422 when
 * the outcome has no such version.
 */
async function judgedEvidence(
  tx: Queryable,
  outcome: OutcomeRow,
  evidenceHash: string | undefined,
): Promise<{ evidence_hash: string; items: number }> {
  const judged = evidenceHash ?? outcome.evidence_hash
  const versions = await queryRows(tx, evidenceVersionSizes(outcome.id))
  const judgedVersion = versions.find((v) => v.evidence_hash === judged)
  if (!judgedVersion) {
    throw new AppError(
      'UNPROCESSABLE',
      `evidence_hash ${judged} is not a version of this outcome's evidence`,
      {},
      [{ path: 'body/evidence_hash', message: 'unknown evidence version' }],
    )
  }
  return { evidence_hash: judged, items: judgedVersion.items }
}

/** An interpretation as it is written: its body, who sent it, its criterion's signature, the evidence judged. */
interface LockedSubmission {
  body: InterpretationSubmission
  principal: Principal
  signature: string
  /** The evidence_hash judged. */
  judged: string
  now: Date
}

/** An interpretation that arrived after the final decision, stored and audited as dissent; the manifest's id. */
async function recordDissent(
  tx: Transaction,
  outcome: OutcomeRow,
  submitted: LockedSubmission,
): Promise<string> {
  const { body, principal, signature, judged, now } = submitted
  const manifestId = outcome.manifest_id!
  const submission = { ...body, evidence_hash: judged } as unknown as JsonValue
  await runStatement(
    tx,
    dissentInsert({
      id: randomUUID(),
      outcome_id: outcome.id,
      orchestrator_id: body.orchestrator_id,
      manifest_id: manifestId,
      submission,
      received_at: now,
      api_key_id: principal.keyId,
    }),
  )
  await appendAuditRecords(tx, [
    {
      kind: 'dissent.recorded',
      actor: principal.keyId,
      at: now.toISOString(),
      outcome_id: outcome.id,
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
  return manifestId
}

/** The orchestrator's next revision of an open outcome, written with the outcome's new bound state and record. */
async function recordRevision(
  tx: Transaction,
  outcome: OutcomeRow,
  submitted: LockedSubmission,
  revision: number,
  boundState: OutcomeBoundState,
): Promise<InterpretationRow> {
  const { body, principal, signature, judged, now } = submitted
  const hasCriterion = body.success_criterion !== undefined
  const row: InterpretationRow = {
    id: randomUUID(),
    outcome_id: outcome.id,
    orchestrator_id: body.orchestrator_id,
    revision,
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
    touch: outcomeBoundUpdate(outcome.id, boundState),
    audit: [
      {
        kind: 'interpretation.recorded',
        actor: principal.keyId,
        at: now.toISOString(),
        outcome_id: outcome.id,
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
  return row
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
  const others = (await queryRows(tx, latestInterpretationBounds(outcome.id))).filter(
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
  const first = firstInterpretationInsert(
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
  const written = await queryFirst(db, first)
  if (!written) return undefined
  return toInterpretationView({ ...row, revision: 1, evidence_hash: written.evidence_hash })
}
