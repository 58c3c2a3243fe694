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

/** Position of the last item of a page, for lists in an ascending sequence (log order, insertion order). */
export const seqPosition = z.object({ seq: z.number().int().nonnegative() })
export type SeqPosition = z.infer<typeof seqPosition>

/** Position for lists ordered by creation time, ties broken by id. */
export const createdPosition = z.object({
  at: z.iso.datetime({ offset: true }),
  id: z.uuid(),
})
export type CreatedPosition = z.infer<typeof createdPosition>

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
 * Reads one page: `fetch(after, limit + 1)` returns rows after the decoded cursor position; the extra row only
 * tells that another page exists. `position` names where the page's last row stands, for the next cursor.
 */
export async function readPage<R, V, P>(
  page: PageRequest,
  positionSchema: z.ZodType<P>,
  fetch: (after: P | null, limit: number) => Promise<R[]>,
  position: (row: R) => P,
  view: (row: R) => V,
): Promise<Page<V>> {
  const after = decodeCursor(page.cursor, positionSchema)
  const rows = await fetch(after, page.limit + 1)
  const more = rows.length > page.limit
  const pageRows = more ? rows.slice(0, page.limit) : rows
  const last = pageRows[pageRows.length - 1]
  return {
    items: pageRows.map(view),
    next_cursor: more && last !== undefined ? encodeCursor(position(last)) : null,
  }
}
