import type { Queryable } from '../../db/pool.ts'
import { queryFirst, queryRows } from '../../db/statement.ts'
import { toManifestInterpretation } from '../../domain/outcome/interpretation.ts'
import type { OutcomeStatus } from '../../domain/outcome/vocabulary.ts'
import { byField } from '../../domain/shared/order.ts'
import { AppError } from '../../errors.ts'
import { type Page, type PageRequest, readSeqPage } from '../../pagination.ts'
import type { ServiceContext } from '../../services/context.ts'
import type { InterpretationRow } from './interpretation-repository.ts'
import { type OutcomeRow, outcomeLock } from './repository.ts'
import { type OutcomeViewRow, outcomeView, outcomeViewsPage } from './view-repository.ts'

/** GET /v1/outcomes/{id}, in one statement. */
export async function getOutcome(ctx: Pick<ServiceContext, 'db'>, outcomeId: string) {
  const outcome = await queryFirst(ctx.db, outcomeView(outcomeId))
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
    (afterSeq, limit) => queryRows(ctx.db, outcomeViewsPage({ ...filter, afterSeq }, limit)),
    (row) => row.list_seq,
    toOutcomeView,
  )
  return result
}

/** The outcome's row, locked until `tx` ends; 404 when there is none. */
export async function lockOutcome(tx: Queryable, outcomeId: string): Promise<OutcomeRow> {
  const outcome = await queryFirst(tx, outcomeLock(outcomeId))
  if (!outcome) throw new AppError('NOT_FOUND', `no outcome ${outcomeId}`)
  return outcome
}

/** The outcome as shown, read again after a change in `tx` (which it sees). */
export async function loadOutcomeView(tx: Queryable, outcomeId: string) {
  const view = await queryFirst(tx, outcomeView(outcomeId))
  if (!view) throw new Error(`outcome ${outcomeId} vanished inside its own transaction`)
  return toOutcomeView(view)
}

/** An interpretation as the API shows it: the manifest's fields plus its id. */
export function toInterpretationView(row: InterpretationRow) {
  return {
    interpretation_id: row.id,
    ...toManifestInterpretation({ ...row, received_at: row.received_at.toISOString() }),
  }
}

export type InterpretationView = ReturnType<typeof toInterpretationView>

/** An outcome as the API shows it. */
export function toOutcomeView(row: OutcomeViewRow) {
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
