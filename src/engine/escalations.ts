import { type EscalationListRow, escalationsPage } from '../db/repositories/escalations.ts'
import { queryRows } from '../db/statement.ts'
import type { EscalationStatus } from '../domain/vocabulary.ts'
import { type Page, type PageRequest, readSeqPage } from '../pagination.ts'
import type { ServiceContext } from '../services/context.ts'
import { parseManifest } from './manifests.ts'

/**
 * An escalation as the engine keeps it: which case HALTed, and the HALT manifest itself (escalations keep it
 * after resolution), so a view of it needs no table of the case's kind.
 */
export function toEscalationView(row: EscalationListRow) {
  const halt = parseManifest(row)
  return {
    case: row.case_kind,
    case_id: row.case_id,
    status: row.status,
    manifest_id: row.manifest_id,
    verdict: halt.verdict,
    halt,
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
