import type { Queryable } from '../db/pool.ts'
import { type EscalationListRow, listEscalations } from '../db/repositories/escalations.ts'
import type { Manifest } from './manifests.ts'

/** An escalation as ops see it: the HALT's verdict and divergence receipt beside the outcome's keys. */
export function toEscalationView(row: EscalationListRow) {
  const halt = JSON.parse(row.manifest_jcs) as Manifest
  return {
    outcome_id: row.outcome_id,
    subagent_id: row.subagent_id,
    run_id: row.run_id,
    status: row.status,
    manifest_id: row.manifest_id,
    verdict: halt.verdict,
    interpretation_divergence_receipt: halt.interpretation_divergence_receipt,
    opened_at: row.opened_at.toISOString(),
    resolved_at: row.resolved_at ? row.resolved_at.toISOString() : null,
  }
}

/** GET /v1/escalations: rows in opening order (callers ask for limit + 1 to learn whether a page follows). */
export async function listEscalationRows(
  db: Queryable,
  filter: { status?: 'open' | 'resolved' | undefined; afterSeq: number | null },
  limit: number,
): Promise<EscalationListRow[]> {
  return listEscalations(db, filter, limit)
}
