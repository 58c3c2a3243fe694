import type { Queryable } from '../db/pool.ts'
import { queryRows } from '../db/statement.ts'
import { type Page, type PageRequest, readSeqPage, seqAfterCursor } from '../pagination.ts'
import {
  type AuditFilter,
  type AuditTextRow,
  auditRecordPageQuery,
  auditRecordText,
  auditRecordTextsQuery,
} from './store/records.ts'
import type { VerifiableLog } from './verifiable-log.ts'

const EXPORT_BATCH = 1_000

export type AuditQuery = Omit<AuditFilter, 'afterSeq'>

/** What the reads use of the service context: the database, and the log to read one's writes from. */
interface LogReader {
  db: Queryable
  auditLog: Pick<VerifiableLog, 'readYourWrites'>
}

/**
 * GET /v1/audit/records: one page of matching records as JSON text (see `AuditRecordText`), ascending seq, read
 * your writes: every change committed before the call is in the log when the page is read. The check and the
 * read are one statement; only while the sequencer is behind does the page wait for it and read again.
 */
export async function pageAuditRecords(
  ctx: Pick<LogReader, 'auditLog'>,
  query: AuditQuery,
  page: PageRequest,
): Promise<Page<string>> {
  return readSeqPage(
    page,
    (afterSeq, limit) =>
      ctx.auditLog.readYourWrites<AuditTextRow>(auditRecordPageQuery({ ...query, afterSeq }, limit), 'seq'),
    (row) => row.seq,
    (row) => auditRecordText(row).text,
  )
}

/**
 * Every match (after `cursor`, a cursor of the paged list) as JSON text, read your writes, batch by batch (each
 * batch a short query, no connection held in between), so an export of millions of records needs memory for one
 * batch only. The first batch checks that every change committed before the call is in the log, in the same
 * statement while the log keeps up (see VerifiableLog.readYourWrites).
 */
export async function* streamAuditRecords(
  ctx: LogReader,
  query: AuditQuery,
  from: { cursor?: string | undefined } = {},
): AsyncGenerator<string> {
  const first = await ctx.auditLog.readYourWrites<AuditTextRow>(
    auditRecordTextsQuery({ ...query, afterSeq: seqAfterCursor(from.cursor) }, EXPORT_BATCH),
    'seq',
  )
  let records = first.map(auditRecordText)
  for (;;) {
    for (const record of records) yield record.text
    if (records.length < EXPORT_BATCH) return
    const after = { ...query, afterSeq: records.at(-1)!.seq }
    records = (await queryRows(ctx.db, auditRecordTextsQuery(after, EXPORT_BATCH))).map(auditRecordText)
  }
}

/** Every record about one case as JSON text, ascending seq, read your writes. */
export async function caseAuditRecords(ctx: LogReader, query: AuditQuery): Promise<string[]> {
  const records: string[] = []
  for await (const record of streamAuditRecords(ctx, query)) records.push(record)
  return records
}
