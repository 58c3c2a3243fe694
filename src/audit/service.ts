import { signCanonical } from '../crypto/jws.ts'
import type { Queryable } from '../db/pool.ts'
import { type AuditRecord, ChainVerifier } from '../domain/shared/audit-chain.ts'
import { AppError } from '../errors.ts'
import { type Page, type PageRequest, readPage, seqPosition } from '../pagination.ts'
import type { ServiceContext } from '../services/context.ts'
import {
  type AuditFilter,
  auditRange,
  auditRowToRecord,
  listAuditRecords,
  readAuditHead,
} from './repository.ts'

const VERIFY_BATCH = 5_000
const EXPORT_BATCH = 1_000

export type AuditQuery = Omit<AuditFilter, 'afterSeq'>

/** GET /v1/audit/records: one page of matching records, ascending seq. */
export async function pageAuditRecords(
  ctx: Pick<ServiceContext, 'db'>,
  query: AuditQuery,
  page: PageRequest,
): Promise<Page<AuditRecord>> {
  return readPage(
    page,
    seqPosition,
    (after, limit) => listAuditRecords(ctx.db, { ...query, afterSeq: after?.seq ?? null }, limit),
    (row) => ({ seq: row.seq }),
    auditRowToRecord,
  )
}

/**
 * Every match after `cursor`, batch by batch (each batch a short query, no connection held in between), so an
 * export of millions of records needs memory for one batch only.
 */
export async function* streamAuditRecords(
  ctx: Pick<ServiceContext, 'db'>,
  query: AuditQuery,
  afterSeq: number | null = null,
): AsyncGenerator<AuditRecord> {
  let cursor = afterSeq
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

export interface ChainReport {
  ok: boolean
  checked: number
  head_seq: number | null
  head_hash: string | null
  first_bad_seq: number | null
}

/**
 * Recomputes the chain over [fromSeq, toSeq] (default: all of it) in slices of 5,000 records, so memory stays
 * bounded at any log size. A gap, a broken link, a wrong hash, or a head pointing past the last record is bad.
 */
export async function verifyAuditChain(
  ctx: Pick<ServiceContext, 'db'>,
  range: { fromSeq?: number | undefined; toSeq?: number | undefined } = {},
): Promise<ChainReport> {
  const db: Queryable = ctx.db
  const fromSeq = range.fromSeq ?? 1
  if (fromSeq < 1) throw new AppError('VALIDATION', 'from_seq starts at 1')
  const head = await readAuditHead(db)
  const last = Math.min(range.toSeq ?? head.seq, head.seq)
  if (last < fromSeq) return { ok: true, checked: 0, head_seq: null, head_hash: null, first_bad_seq: null }
  const previous = fromSeq > 1 ? (await auditRange(db, fromSeq - 1, fromSeq - 1, 1))[0] : undefined
  const verifier = new ChainVerifier(
    previous ? { seq: previous.seq, hash: previous.hash } : null,
    fromSeq === 1,
  )
  let expectedNext = fromSeq
  // The next slice is fetched while this one is hashed: database time and hashing overlap.
  let pending = auditRange(db, fromSeq, last, VERIFY_BATCH)
  for (;;) {
    const rows = await pending
    const lastRow = rows[rows.length - 1]
    if (!lastRow) break
    pending = lastRow.seq < last ? auditRange(db, lastRow.seq + 1, last, VERIFY_BATCH) : Promise.resolve([])
    let stop = false
    for (const row of rows) {
      if (!verifier.push(auditRowToRecord(row))) {
        stop = true
        break
      }
      expectedNext = row.seq + 1
    }
    if (stop) {
      await pending.catch(() => [])
      break
    }
  }
  const report = verifier.result
  // Records missing at the end of the range (deleted tail) are a break at the first missing seq.
  const firstBad = report.firstBadSeq ?? (expectedNext <= last ? expectedNext : null)
  return {
    ok: firstBad === null,
    checked: report.checked,
    head_seq: report.head?.seq ?? null,
    head_hash: report.head?.hash ?? null,
    first_bad_seq: firstBad,
  }
}

/** A signed statement of the chain head, for ops to keep elsewhere and compare later. */
export async function auditCheckpoint(ctx: Pick<ServiceContext, 'db' | 'signingKey'>) {
  const head = await readAuditHead(ctx.db)
  const checkpoint = { seq: head.seq, hash: head.hash, at: new Date().toISOString() }
  return { checkpoint, jws: await signCanonical(checkpoint, ctx.signingKey) }
}
