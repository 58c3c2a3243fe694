import { z } from 'zod'
import { AppError } from './errors.ts'

/** Lists are paged by `?limit=&cursor=`; this is the default page size, and limits above the maximum are clamped. */
export const DEFAULT_LIMIT = 50
export const MAX_LIMIT = 500

/** What a caller asks of a list: a page size and, after the first page, the cursor it was given. */
export interface PageRequest {
  limit: number
  cursor?: string | undefined
}

export interface Page<T> {
  items: T[]
  /** Opaque; null is the only end-of-list signal. */
  next_cursor: string | null
}

// Where the last item of a page stands. Lists in an ascending sequence (log order, insertion order) page by seq;
// lists ordered by creation time page by (time, id), the id breaking ties.
const seqPosition = z.object({ seq: z.number().int().nonnegative() })
const createdPosition = z.object({ at: z.iso.datetime({ offset: true }), id: z.uuid() })

/** Cursors are opaque base64url JSON of a position; anything that does not decode to what was issued → 400. */
function encodeCursor(position: unknown): string {
  return Buffer.from(JSON.stringify(position), 'utf8').toString('base64url')
}

export function decodeCursor<T>(cursor: string | undefined, schema: z.ZodType<T>): T | null {
  if (cursor === undefined) return null
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url')
    return schema.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')))
  } catch {
    throw new AppError('MALFORMED_CURSOR', 'the cursor is malformed; use next_cursor from a previous page')
  }
}

/**
 * Rows of a byte-bounded page statement (src/db/bounded-page.ts) carry how many rows the page held before its
 * byte bound cut it short: fewer rows than that means more follow.
 */
interface MaybeBoundedRow {
  page_rows?: number
}

/**
 * Reads one page: `fetch` returns up to `limit + 1` rows after the decoded position; the extra row only tells that
 * another page exists, and so does a page its byte bound cut short. `position` names where the page's last row
 * stands, for the next cursor.
 */
async function readPage<R, V, P>(
  page: PageRequest,
  positionSchema: z.ZodType<P>,
  fetch: (after: P | null, limit: number) => Promise<R[]>,
  position: (row: R) => P,
  view: (row: R) => V,
): Promise<Page<V>> {
  const after = decodeCursor(page.cursor, positionSchema)
  const rows = await fetch(after, page.limit + 1)
  const held = (rows[0] as MaybeBoundedRow | undefined)?.page_rows
  const more = rows.length > page.limit || (held !== undefined && held > rows.length)
  const pageRows = more ? rows.slice(0, page.limit) : rows
  const last = pageRows[pageRows.length - 1]
  return {
    items: pageRows.map(view),
    next_cursor: more && last !== undefined ? encodeCursor(position(last)) : null,
  }
}

/** A page of a list in an ascending sequence: `fetch(afterSeq, limit)` returns rows whose seq is past it. */
export function readSeqPage<R, V>(
  page: PageRequest,
  fetch: (afterSeq: number | null, limit: number) => Promise<R[]>,
  seqOf: (row: R) => number,
  view: (row: R) => V,
): Promise<Page<V>> {
  return readPage(
    page,
    seqPosition,
    (after, limit) => fetch(after?.seq ?? null, limit),
    (row) => ({ seq: seqOf(row) }),
    view,
  )
}

/** The seq a cursor of `readSeqPage` points after (null without a cursor), for readers that stream on. */
export function seqAfterCursor(cursor: string | undefined): number | null {
  return decodeCursor(cursor, seqPosition)?.seq ?? null
}

/** A page of a list ordered by (created_at, id). */
export function readCreatedPage<R extends { created_at: Date; id: string }, V>(
  page: PageRequest,
  fetch: (after: { at: Date; id: string } | null, limit: number) => Promise<R[]>,
  view: (row: R) => V,
): Promise<Page<V>> {
  return readPage(
    page,
    createdPosition,
    (after, limit) => fetch(after && { at: new Date(after.at), id: after.id }, limit),
    (row) => ({ at: row.created_at.toISOString(), id: row.id }),
    view,
  )
}
