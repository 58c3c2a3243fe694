import { z } from 'zod'
import { SHA256_PATTERN } from '../../domain/shared/canonical-json.ts'
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../pagination.ts'
import { problemSchema } from '../errors.ts'
import { jsonValueTakenAsIs } from './taken-as-is.ts'

/** The name free JSON is described under, in the OpenAPI document and in the MCP tools' input schemas. */
export const JSON_VALUE_ID = 'JsonValue'

/**
 * Free JSON (evidence content, criteria, probe params): any JSON value, taken as it is. Described as one
 * registered schema that refers to itself, so the OpenAPI document writes it once as the component `JsonValue`
 * (its definition written by withJsonValueDefinition) and the client's `JsonValue` type comes from it. It is
 * checked only for presence (see jsonValueTakenAsIs): bodies reach schemas only through the JSON body parser,
 * which already holds every value to I-JSON, bounds depth and refuses what cannot be stored.
 */
export const freeJson = jsonValueTakenAsIs({ id: JSON_VALUE_ID, description: 'Any JSON value.' })

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

/**
 * THE query-string integer, used by every route that reads one (`limit`, `from_seq`, `to_seq`, `seq`, sizes): plain
 * decimal — digits only, no sign, no leading zero, no `0x`, no exponent, no whitespace — and at least 1. Read as a
 * bigint, exactly as sent: a value past 2^53 - 1 is still an integer (a limit is clamped, a seq or size lies beyond
 * any log), and comparisons (`from_size <= to_size`) and messages must be about the number the client wrote, not
 * a rounded one. {@link queryIntegerAtMost} turns it into a safe number where a route needs one.
 */
export const positiveQueryInteger = z
  .string()
  .regex(
    /^(0|[1-9][0-9]*)$/,
    'must be a plain decimal integer (digits only: no sign, leading zero or exponent)',
  )
  .refine((text) => text !== '0', 'must be at least 1')
  .transform((text) => BigInt(text))

/** A query integer as a number no larger than `max` (a safe integer): larger values are read as `max`. */
export function queryIntegerAtMost(value: bigint, max: number = Number.MAX_SAFE_INTEGER): number {
  return value > BigInt(max) ? max : Number(value)
}

/** `?limit=&cursor=` shared by every list: limits above the maximum are clamped, not rejected. */
export const pageQuery = {
  limit: positiveQueryInteger
    .optional()
    .transform((value) => (value === undefined ? DEFAULT_LIMIT : queryIntegerAtMost(value, MAX_LIMIT)))
    .describe(
      `page size (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT}); a page also stops early at about 4 MiB of JSON`,
    ),
  cursor: z.string().max(512).optional().describe('opaque cursor from a previous page'),
}

export function pageOf<T extends z.ZodType>(itemsSchema: T) {
  return z.object({
    items: z.array(itemsSchema),
    next_cursor: z
      .string()
      .nullable()
      .describe(
        'the cursor of the next page; null is the only end of the list (a page holds at most `limit` items and ' +
          'about 4 MiB of JSON, so a page of fewer items may still be followed by another)',
      ),
  })
}
