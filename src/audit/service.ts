import type { AuditRecord } from '../domain/shared/audit-chain.ts'
import { type Page, type PageRequest, readSeqPage, seqAfterCursor } from '../pagination.ts'
import type { ServiceContext } from '../services/context.ts'
import {
  type AuditFilter,
  auditRowToRecord,
  listAuditRecords,
  listAuditRecordsSequenced,
} from './repository.ts'

const EXPORT_BATCH = 1_000

export type AuditQuery = Omit<AuditFilter, 'afterSeq'>

/**
 * GET /v1/audit/records: one page of matching records, ascending seq, read your writes: every change committed
 * before the call is in the log when the page is read. The check and the read are one statement; only while the
 * sequencer is behind does the page wait for it and read again.
 */
export async function pageAuditRecords(
  ctx: Pick<ServiceContext, 'db' | 'auditLog'>,
  query: AuditQuery,
  page: PageRequest,
): Promise<Page<AuditRecord>> {
  return readSeqPage(
    page,
    async (afterSeq, limit) => {
      const filter = { ...query, afterSeq }
      const first = await listAuditRecordsSequenced(ctx.db, filter, limit)
      if (!first.pending) return first.rows
      await ctx.auditLog.sequenced(first.mark)
      return listAuditRecords(ctx.db, filter, limit)
    },
    (row) => row.seq,
    auditRowToRecord,
  )
}

/**
 * Every match (after `cursor`, a cursor of the paged list), batch by batch (each batch a short query, no
 * connection held in between), so an export of millions of records needs memory for one batch only.
 */
export async function* streamAuditRecords(
  ctx: Pick<ServiceContext, 'db'>,
  query: AuditQuery,
  from: { cursor?: string | undefined } = {},
): AsyncGenerator<AuditRecord> {
  let cursor = seqAfterCursor(from.cursor)
  for (;;) {
    const rows = await listAuditRecords(ctx.db, { ...query, afterSeq: cursor }, EXPORT_BATCH)
    for (const row of rows) yield auditRowToRecord(row)
    if (rows.length < EXPORT_BATCH) return
    cursor = rows[rows.length - 1]!.seq
  }
}

/** Every record about one case, ascending seq. */
export async function caseAuditRecords(ctx: Pick<ServiceContext, 'db'>, query: AuditQuery) {
  const records: AuditRecord[] = []
  for await (const record of streamAuditRecords(ctx, query)) records.push(record)
  return records
}
