import { z } from 'zod'
import { AppError } from '../errors.ts'

export const DEFAULT_LIMIT = 50
export const MAX_LIMIT = 500

/** `?limit=&cursor=` shared by every list (SPEC §2): limits above 500 are clamped, not rejected. */
export const pageQuery = {
  limit: z
    .string()
    .regex(/^\d+$/, 'must be a positive integer')
    .optional()
    // Clamp from the digits, so even a number past 2^53 is clamped rather than refused (SPEC §2).
    .transform((text) => {
      if (text === undefined) return DEFAULT_LIMIT
      const digits = text.replace(/^0+(?=\d)/, '')
      return digits.length > 3 ? MAX_LIMIT : Math.min(Number(digits), MAX_LIMIT)
    })
    .refine((value) => value >= 1, 'must be at least 1')
    .describe('page size (default 50, at most 500)'),
  cursor: z.string().max(512).optional().describe('opaque cursor from a previous page'),
}

export function pageOf<T>(itemsSchema: T) {
  return z.object({ items: z.array(itemsSchema as z.ZodType), next_cursor: z.string().nullable() })
}

/** Cursors are opaque base64url JSON; anything that does not decode to what was issued → 400. */
export function encodeCursor(position: unknown): string {
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

/** Fetch `limit + 1` rows, then call this: the extra row only tells that another page exists. */
export function toPage<R, V>(rows: R[], limit: number, view: (row: R) => V, position: (row: R) => unknown) {
  const more = rows.length > limit
  const pageRows = more ? rows.slice(0, limit) : rows
  const last = pageRows[pageRows.length - 1]
  return {
    items: pageRows.map(view),
    next_cursor: more && last !== undefined ? encodeCursor(position(last)) : null,
  }
}
