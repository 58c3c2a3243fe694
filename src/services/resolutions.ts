import { randomUUID } from 'node:crypto'
import { withTransaction } from '../db/pool.ts'
import { resolveEscalation } from '../db/repositories/escalations.ts'
import { findManifest } from '../db/repositories/manifests.ts'
import { findOutcome, updateOutcomeDecision } from '../db/repositories/outcomes.ts'
import { chooseActionOwner } from '../domain/decision.ts'
import { AppError } from '../errors.ts'
import type { ServiceContext } from './context.ts'
import type { Principal } from './keys.ts'
import { envelopeFromRow, issueManifest, type ManifestEnvelope } from './manifests.ts'

export interface ResolutionInput {
  outcome: 'success' | 'partial' | 'failure'
  rationale: string
  action_owner?: string | undefined
}

/**
 * POST /v1/outcomes/{id}/resolution: a human settles a HALT with a final HUMAN_RESOLVED manifest that
 * supersedes it. The outcome row lock makes two racing resolutions queue; the second finds the outcome
 * resolved and gets 409.
 */
export async function resolveOutcome(
  ctx: ServiceContext,
  outcomeId: string,
  input: ResolutionInput,
  principal: Principal,
): Promise<ManifestEnvelope> {
  const envelope = await withTransaction(ctx.db, async (tx) => {
    const outcome = await findOutcome(tx, outcomeId, { lock: true })
    if (!outcome) throw new AppError('NOT_FOUND', `no outcome ${outcomeId}`)
    if (outcome.status !== 'halted') {
      throw new AppError('CONFLICT', `only a HALTed outcome can be resolved; this one is ${outcome.status}`, {
        manifest_id: outcome.manifest_id,
      })
    }
    const haltRow = await findManifest(tx, outcome.manifest_id!)
    if (!haltRow) throw new Error(`outcome ${outcomeId} names a missing manifest`)
    const halt = envelopeFromRow(haltRow).manifest
    const received = halt.interpretations.map((i) => ({
      ...i,
      success_criterion: undefined,
      evidence_item_hashes: [],
    }))
    const actionOwner =
      input.action_owner ?? chooseActionOwner(received, input.outcome, outcome.arbiter_orchestrator_id)
    const resolution = { by: principal.keyId, rationale: input.rationale }
    const manifestId = randomUUID()
    // Rows naming the new manifest first; issueManifest takes the global chain lock and comes last.
    await resolveEscalation(tx, outcome.id, manifestId, new Date())
    await updateOutcomeDecision(tx, outcome.id, {
      status: 'resolved',
      manifestId,
      reevaluationRounds: outcome.reevaluation_rounds,
    })
    const { manifest_id: _halt, issued_at: _at, audit_seq: _seq, ...haltContent } = halt
    return issueManifest(tx, ctx, {
      manifestId,
      final: true,
      inputsDigest: halt.manifest_id,
      actor: principal.keyId,
      content: {
        ...haltContent,
        verdict: 'HUMAN_RESOLVED',
        directive: 'PROCEED',
        resolved_outcome: input.outcome,
        action_owner: actionOwner,
        supersedes: halt.manifest_id,
        resolution,
      },
      before: [
        {
          kind: 'resolution.recorded',
          actor: principal.keyId,
          outcome_id: outcome.id,
          manifest_id: halt.manifest_id,
          subagent_id: outcome.subagent_id,
          verdict: 'HUMAN_RESOLVED',
          data: {
            outcome: input.outcome,
            rationale: input.rationale,
            action_owner: actionOwner,
            supersedes: halt.manifest_id,
          },
        },
      ],
    })
  })
  ctx.metrics.manifestsIssued.inc({ verdict: 'HUMAN_RESOLVED', directive: 'PROCEED' })
  return envelope
}
