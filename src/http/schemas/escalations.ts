import { z } from 'zod'
import { ESCALATION_STATUSES } from '../../domain/vocabulary.ts'
import { pageQuery } from './common.ts'

/**
 * `GET /v1/escalations` query: which escalations (open or resolved, of which case kind), one page at a time;
 * `cases` are the kinds that escalate.
 */
export function escalationQueryOf(cases: [string, ...string[]]) {
  return z.strictObject({
    status: z.enum(ESCALATION_STATUSES).optional(),
    case: z.enum(cases).optional(),
    ...pageQuery,
  })
}
