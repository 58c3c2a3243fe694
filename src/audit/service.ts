import type { AuditRecord } from '../domain/shared/audit-chain.ts'
import { type Page, type PageRequest, readSeqPage, seqAfterCursor } from '../pagination.ts'
import type { ServiceContext } from '../services/context.ts'
import {
  type AuditFilter,
  type AuditRow,
  auditRecordsQuery,
  auditRowToRecord,
  listAuditRecords,
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
    (afterSeq, limit) =>
      ctx.auditLog.readYourWrites<AuditRow>(auditRecordsQuery({ ...query, afterSeq }, limit), 'seq'),
    (row) => row.seq,
    auditRowToRecord,
  )
}

/**
 * Every match (after `cursor`, a cursor of the paged list), read your writes, batch by batch (each batch a short
 * query, no connection held in between), so an export of millions of records needs memory for one batch only.
 * The first batch checks that every change committed before the call is in the log, in the same statement while
 * the log keeps up (see VerifiableLog.readYourWrites).
 */
export async function* streamAuditRecords(
  ctx: Pick<ServiceContext, 'db' | 'auditLog'>,
  query: AuditQuery,
  from: { cursor?: string | undefined } = {},
): AsyncGenerator<AuditRecord> {
  let cursor = seqAfterCursor(from.cursor)
  let rows = await ctx.auditLog.readYourWrites<AuditRow>(
    auditRecordsQuery({ ...query, afterSeq: cursor }, EXPORT_BATCH),
    'seq',
  )
  for (;;) {
    for (const row of rows) yield auditRowToRecord(row)
    if (rows.length < EXPORT_BATCH) return
    cursor = rows[rows.length - 1]!.seq
    rows = await listAuditRecords(ctx.db, { ...query, afterSeq: cursor }, EXPORT_BATCH)
  }
}

/** Every record about one case, ascending seq, read your writes. */
export async function caseAuditRecords(ctx: Pick<ServiceContext, 'db' | 'auditLog'>, query: AuditQuery) {
  const records: AuditRecord[] = []
  for await (const record of streamAuditRecords(ctx, query)) records.push(record)
  return records
}
