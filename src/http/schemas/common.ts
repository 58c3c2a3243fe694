import { z } from 'zod'
import { SHA256_PATTERN } from '../../domain/shared/canonical-json.ts'
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../pagination.ts'
import { problemSchema } from '../errors.ts'

/**
 * Free JSON (evidence content, criteria, probe params): any value; the JSON parser already bounds depth. It
 * validates exactly as `z.json()`, but it is one registered schema that refers to itself, so the OpenAPI document
 * writes it once as the component `JsonValue` (an unnamed recursive schema would become a `$ref` to nothing).
 */
export const freeJson: z.ZodType<z.core.util.JSONType> = z
  .lazy(() =>
    z.union([
      z.string(),
      z.number(),
      z.boolean(),
      z.null(),
      z.array(freeJson),
      z.record(z.string(), freeJson),
    ]),
  )
  .meta({ id: 'JsonValue', description: 'Any JSON value.' })

export const uuidParam = z.uuid({ message: 'must be a UUID' })

export const idParams = z.strictObject({ id: uuidParam })

export const rfc3339 = z.iso
  .datetime({ offset: true, message: 'must be an RFC 3339 date-time' })
  .refine((text) => {
    // An offset can carry the UTC instant outside 0001–9999, which could not be written back as RFC 3339.
    const year = new Date(text).getUTCFullYear()
    return year >= 1 && year <= 9999
  }, 'must fall between years 0001 and 9999 in UTC')

export const sha256String = z.string().regex(SHA256_PATTERN, 'must be sha256:<64 lowercase hex>')

/** Problem responses every authenticated route can give; spread into `response`. */
export const authProblems = {
  400: problemSchema,
  401: problemSchema,
  403: problemSchema,
  429: problemSchema,
  503: problemSchema,
}

/** `?limit=&cursor=` shared by every list: limits above the maximum are clamped, not rejected. */
export const pageQuery = {
  limit: z
    .string()
    .regex(/^\d+$/, 'must be a positive integer')
    .optional()
    // Clamp from the digits, so even a number past 2^53 is clamped rather than refused.
    .transform((text) => {
      if (text === undefined) return DEFAULT_LIMIT
      const digits = text.replace(/^0+(?=\d)/, '')
      return digits.length > 3 ? MAX_LIMIT : Math.min(Number(digits), MAX_LIMIT)
    })
    .refine((value) => value >= 1, 'must be at least 1')
    .describe(`page size (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`),
  cursor: z.string().max(512).optional().describe('opaque cursor from a previous page'),
}

export function pageOf<T extends z.ZodType>(itemsSchema: T) {
  return z.object({ items: z.array(itemsSchema), next_cursor: z.string().nullable() })
}
