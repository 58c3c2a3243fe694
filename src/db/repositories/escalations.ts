import type { Queryable } from '../pool.ts'

/** escalations: one per HALTed outcome. status open → resolved when a human resolution supersedes the HALT. */
export interface EscalationRow {
  outcome_id: string
  manifest_id: string
  status: 'open' | 'resolved'
  opened_at: Date
  resolved_at: Date | null
  resolution_manifest_id: string | null
  list_seq: number
}

export async function insertEscalation(
  db: Queryable,
  e: { outcomeId: string; manifestId: string; openedAt: Date },
) {
  await db.query(
    `INSERT INTO escalations (outcome_id, manifest_id, status, opened_at) VALUES ($1, $2, 'open', $3)`,
    [e.outcomeId, e.manifestId, e.openedAt],
  )
}

export async function resolveEscalation(db: Queryable, outcomeId: string, manifestId: string, at: Date) {
  await db.query(
    `UPDATE escalations SET status = 'resolved', resolved_at = $3, resolution_manifest_id = $2 WHERE outcome_id = $1`,
    [outcomeId, manifestId, at],
  )
}

export interface EscalationListRow extends EscalationRow {
  subagent_id: string
  run_id: string
  /** The HALT manifest's JCS text (its verdict and receipt are shown in the list). */
  manifest_jcs: string
}

export async function listEscalations(
  db: Queryable,
  filter: { status?: 'open' | 'resolved' | undefined; afterSeq: number | null },
  limit: number,
): Promise<EscalationListRow[]> {
  const { rows } = await db.query<EscalationListRow>(
    `SELECT e.outcome_id, e.manifest_id, e.status, e.opened_at, e.resolved_at, e.resolution_manifest_id, e.list_seq,
            o.subagent_id, o.run_id, m.manifest_jcs
     FROM escalations e JOIN outcomes o ON o.id = e.outcome_id JOIN manifests m ON m.id = e.manifest_id
     WHERE ($1::text IS NULL OR e.status = $1) AND ($2::bigint IS NULL OR e.list_seq > $2)
     ORDER BY e.list_seq LIMIT $3`,
    [filter.status ?? null, filter.afterSeq, limit],
  )
  return rows
}
