import { randomUUID } from 'node:crypto'
import { withTransaction } from '../db/pool.ts'
import {
  type InterpretationRow,
  insertDissent,
  insertInterpretation,
  latestInterpretationOf,
} from '../db/repositories/interpretations.ts'
import { findOutcome, listEvidenceVersions } from '../db/repositories/outcomes.ts'
import { hashJson, type JsonValue } from '../domain/canonical-json.ts'
import { AppError } from '../errors.ts'
import type { InterpretationBody } from '../http/schemas/arbitration.ts'
import { appendAuditRecord } from './audit-log.ts'
import type { ServiceContext } from './context.ts'
import { type InterpretationView, toInterpretationView } from './interpretation-view.ts'
import type { Principal } from './keys.ts'
import { isFinalStatus } from './outcomes.ts'

export type SubmitResult =
  | { kind: 'created'; interpretation: InterpretationView & { interpretation_id: string } }
  | { kind: 'unchanged'; interpretation: InterpretationView & { interpretation_id: string } }
  /** Arrived after a final decision: stored and audited as dissent, the decision stands (→ 409). */
  | { kind: 'dissent'; manifestId: string }

/** What makes two submissions "exactly" the same (SPEC §3: identical resubmission is a no-op). */
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
  ctx: ServiceContext,
  outcomeId: string,
  body: InterpretationBody,
  principal: Principal,
): Promise<SubmitResult> {
  const hasCriterion = body.success_criterion !== undefined
  const signature = hasCriterion ? hashJson(body.success_criterion) : body.success_criterion_hash!
  return withTransaction(ctx.db, async (tx) => {
    // The row lock orders this submission against evaluation: a revision either lands before a decision or
    // sees it and becomes dissent.
    const outcome = await findOutcome(tx, outcomeId, { lock: true })
    if (!outcome) throw new AppError('NOT_FOUND', `no outcome ${outcomeId}`)
    const evidenceHash = body.evidence_hash ?? outcome.evidence_hash
    const versions = await listEvidenceVersions(tx, [outcomeId])
    if (!versions.some((v) => v.evidence_hash === evidenceHash)) {
      throw new AppError(
        'UNPROCESSABLE',
        `evidence_hash ${evidenceHash} is not a version of this outcome's evidence`,
        {},
        [{ path: 'body/evidence_hash', message: 'unknown evidence version' }],
      )
    }
    const latest = await latestInterpretationOf(tx, outcomeId, body.orchestrator_id)
    const fingerprint = submissionFingerprint({
      signature,
      hasCriterion,
      reading: body.outcome_interpretation,
      evidenceHash,
      intendedAction: body.intended_action,
      rationale: body.rationale ?? null,
    })
    if (latest && rowFingerprint(latest) === fingerprint) {
      return {
        kind: 'unchanged',
        interpretation: { interpretation_id: latest.id, ...toInterpretationView(latest) },
      }
    }
    const now = new Date()
    if (isFinalStatus(outcome.status)) {
      const manifestId = outcome.manifest_id!
      const submission = { ...body, evidence_hash: evidenceHash } as unknown as JsonValue
      await insertDissent(tx, {
        id: randomUUID(),
        outcome_id: outcomeId,
        orchestrator_id: body.orchestrator_id,
        manifest_id: manifestId,
        submission,
        received_at: now,
        api_key_id: principal.keyId,
      })
      await appendAuditRecord(tx, {
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
          evidence_hash: evidenceHash,
          intended_action: (body.intended_action ?? null) as JsonValue,
          rationale: body.rationale ?? null,
        },
      })
      return { kind: 'dissent', manifestId }
    }
    const row: InterpretationRow = {
      id: randomUUID(),
      outcome_id: outcomeId,
      orchestrator_id: body.orchestrator_id,
      revision: (latest?.revision ?? 0) + 1,
      has_criterion: hasCriterion,
      success_criterion: hasCriterion ? (body.success_criterion as JsonValue) : null,
      success_criterion_signature: signature,
      outcome_interpretation: body.outcome_interpretation,
      evidence_hash: evidenceHash,
      intended_action: body.intended_action ?? null,
      rationale: body.rationale ?? null,
      received_at: now,
      api_key_id: principal.keyId,
    }
    await insertInterpretation(tx, row)
    await appendAuditRecord(tx, {
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
        evidence_hash: evidenceHash,
        intended_action: row.intended_action as JsonValue,
      },
    })
    return { kind: 'created', interpretation: { interpretation_id: row.id, ...toInterpretationView(row) } }
  })
}
