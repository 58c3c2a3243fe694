import { z } from 'zod'
import { problemSchema } from '../errors.ts'

export const uuidParam = z.uuid({ message: 'must be a UUID' })

export const idParams = z.strictObject({ id: uuidParam })

export const rfc3339 = z.iso
  .datetime({ offset: true, message: 'must be an RFC 3339 date-time' })
  .refine((text) => {
    // An offset can carry the UTC instant outside 0001–9999, which could not be written back as RFC 3339.
    const year = new Date(text).getUTCFullYear()
    return year >= 1 && year <= 9999
  }, 'must fall between years 0001 and 9999 in UTC')

export const sha256String = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'must be sha256:<64 lowercase hex>')

/** Problem responses every authenticated route can give; spread into `response`. */
export const authProblems = {
  400: problemSchema,
  401: problemSchema,
  403: problemSchema,
  429: problemSchema,
  503: problemSchema,
}
