import { signCanonical } from '../crypto/jws.ts'
import type { Queryable } from '../db/pool.ts'
import {
  type AuditFilter,
  auditRange,
  auditRowToRecord,
  listAuditRecords,
  readAuditHead,
} from '../db/repositories/audit-records.ts'
import { findOutcome } from '../db/repositories/outcomes.ts'
import { type AuditRecord, ChainVerifier } from '../domain/audit-chain.ts'
import { AppError } from '../errors.ts'
import type { ServiceContext } from './context.ts'
import { loadEnvelope } from './manifests.ts'

const VERIFY_BATCH = 5_000
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
export async function verifyAuditChain(db: Queryable, fromSeq = 1, toSeq?: number): Promise<ChainReport> {
  if (fromSeq < 1) throw new AppError('VALIDATION', 'from_seq starts at 1')
  const head = await readAuditHead(db)
  const last = Math.min(toSeq ?? head.seq, head.seq)
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
export async function auditCheckpoint(ctx: ServiceContext) {
  const head = await readAuditHead(ctx.db)
  const checkpoint = { seq: head.seq, hash: head.hash, at: new Date().toISOString() }
  return { checkpoint, jws: await signCanonical(checkpoint, ctx.signingKey) }
}
