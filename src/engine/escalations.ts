import { type EscalationListRow, escalationsPage } from '../db/repositories/escalations.ts'
import { queryRows } from '../db/statement.ts'
import type { DivergenceReceipt } from '../domain/outcome/divergence-receipt.ts'
import type { EscalationCase, EscalationStatus, ManifestVerdict } from '../domain/vocabulary.ts'
import { type Page, type PageRequest, readSeqPage } from '../pagination.ts'
import type { ServiceContext } from '../services/context.ts'
import { parseManifest } from './manifests.ts'

/**
 * An escalation as ops see it: which case HALTed, the HALT's verdict and (for outcomes) its divergence receipt.
 * Escalations keep the HALT's manifest and verdict after resolution. Read from the HALT manifest itself, so the
 * view needs no table of the case's kind: a field the kind's manifest does not have is null.
 */
export function toEscalationView(row: EscalationListRow) {
  const halt = parseManifest(row)
  const text = (value: unknown) => (typeof value === 'string' ? value : null)
  return {
    // Only the kinds that escalate open escalations.
    case: row.case_kind as EscalationCase,
    outcome_id: row.case_kind === 'outcome' ? row.case_id : null,
    fanout_id: row.case_kind === 'fanout' ? row.case_id : null,
    subagent_id: text(halt.subagent_id),
    run_id: text(halt.run_id),
    status: row.status,
    manifest_id: row.manifest_id,
    verdict: halt.verdict as ManifestVerdict,
    // Outcomes' HALTs carry a divergence receipt; other kinds' manifests hold what they found themselves.
    interpretation_divergence_receipt: (halt.interpretation_divergence_receipt ??
      null) as DivergenceReceipt | null,
    opened_at: row.opened_at.toISOString(),
    resolved_at: row.resolved_at ? row.resolved_at.toISOString() : null,
  }
}

export type EscalationView = ReturnType<typeof toEscalationView>

/** GET /v1/escalations: in opening order. */
export async function pageEscalations(
  ctx: Pick<ServiceContext, 'db'>,
  query: { status?: EscalationStatus | undefined; caseKind?: string | undefined },
  page: PageRequest,
): Promise<Page<EscalationView>> {
  return readSeqPage(
    page,
    (afterSeq, limit) => queryRows(ctx.db, escalationsPage({ ...query, afterSeq }, limit)),
    (row) => row.list_seq,
    toEscalationView,
  )
}
