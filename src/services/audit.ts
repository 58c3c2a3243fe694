import type { Queryable } from '../db/pool.ts'
import { type AuditFilter, auditRowToRecord, listAuditRecords } from '../db/repositories/audit-records.ts'
import { findOutcome } from '../db/repositories/outcomes.ts'
import type { AuditRecord } from '../domain/audit-chain.ts'
import { AppError } from '../errors.ts'
import type { ServiceContext } from './context.ts'
import { loadEnvelope } from './manifests.ts'

const EXPORT_BATCH = 1_000

export async function queryAuditRecords(db: Queryable, filter: AuditFilter, limit: number) {
  return (await listAuditRecords(db, filter, limit)).map(auditRowToRecord)
}

/**
 * Every match, batch by batch (each batch a short query, no connection held in between), so an export of
 * millions of records needs memory for one batch only.
 */
export async function* streamAuditRecords(
  db: Queryable,
  filter: Omit<AuditFilter, 'afterSeq'>,
  afterSeq: number | null,
) {
  let cursor = afterSeq
  for (;;) {
    const rows = await listAuditRecords(db, { ...filter, afterSeq: cursor }, EXPORT_BATCH)
    for (const row of rows) yield auditRowToRecord(row)
    if (rows.length < EXPORT_BATCH) return
    cursor = rows[rows.length - 1]!.seq
  }
}

export async function outcomeStory(ctx: ServiceContext, outcomeId: string) {
  const outcome = await findOutcome(ctx.db, outcomeId)
  if (!outcome) throw new AppError('NOT_FOUND', `no outcome ${outcomeId}`)
  const records: AuditRecord[] = []
  for await (const record of streamAuditRecords(ctx.db, { outcomeId }, null)) records.push(record)
  const manifest = outcome.manifest_id ? ((await loadEnvelope(ctx.db, outcome.manifest_id)) ?? null) : null
  return { outcome_id: outcome.id, status: outcome.status, records, manifest }
}
