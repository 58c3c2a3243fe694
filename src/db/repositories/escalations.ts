import type { CaseRef, EscalationStatus } from '../../domain/vocabulary.ts'
import { boundedPageQuery } from '../bounded-page.ts'
import { type Statement, statement } from '../statement.ts'

/**
 * escalations: one per HALTed case. case_kind + case_id; manifest_id (the HALT); status (open → resolved when a
 * human resolution supersedes the HALT); opened_at; resolved_at; resolution_manifest_id; list_seq (opening order,
 * for cursors).
 */
export interface EscalationRow {
  case_kind: string
  case_id: string
  manifest_id: string
  status: EscalationStatus
  opened_at: Date
  resolved_at: Date | null
  resolution_manifest_id: string | null
  list_seq: number
}

export function escalationInsert(of: CaseRef, manifestId: string, openedAt: Date): Statement {
  return {
    // INSERT … SELECT, so that it can be made conditional (guardedWrites).
    text: `INSERT INTO escalations (case_kind, case_id, manifest_id, status, opened_at) SELECT $1, $2, $3, 'open', $4`,
    values: [of.kind, of.id, manifestId, openedAt],
    prepare: true,
  }
}

/** The case's escalation, resolved by the manifest `manifestId`. */
export function escalationResolve(of: CaseRef, manifestId: string, at: Date): Statement {
  return statement(
    `UPDATE escalations SET status = 'resolved', resolved_at = $4, resolution_manifest_id = $3
     WHERE case_kind = $1 AND case_id = $2`,
    [of.kind, of.id, manifestId, at],
  )
}

export interface EscalationListRow extends EscalationRow {
  /** The HALT manifest's JCS text (its verdict and receipt are shown in the list). */
  manifest_jcs: string
}

/**
 * A page of escalations, bounded in bytes (src/db/bounded-page.ts): each is shown from its HALT manifest, whose
 * size it takes.
 */
const ESCALATION_PAGE = boundedPageQuery({
  table: 'escalations',
  alias: 'e',
  key: 'list_seq',
  columns: `e.case_kind, e.case_id, e.manifest_id, e.status, e.opened_at, e.resolved_at, e.resolution_manifest_id,
            e.list_seq, (SELECT m.manifest_jcs FROM manifests m WHERE m.id = e.manifest_id) AS manifest_jcs`,
  where: `($1::text IS NULL OR e.status = $1) AND ($2::text IS NULL OR e.case_kind = $2)
       AND ($3::bigint IS NULL OR e.list_seq > $3)`,
  order: ['list_seq'],
  itemBytes: `400 + coalesce((SELECT octet_length(m.manifest_jcs) FROM manifests m WHERE m.id = e.manifest_id), 0)`,
  limit: '$4',
})

export function escalationsPage(
  filter: { status?: EscalationStatus | undefined; caseKind?: string | undefined; afterSeq: number | null },
  limit: number,
): Statement<EscalationListRow> {
  return statement(ESCALATION_PAGE, [filter.status ?? null, filter.caseKind ?? null, filter.afterSeq, limit])
}
