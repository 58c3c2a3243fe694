import { z } from 'zod'
import { ESCALATION_CASES, ESCALATION_STATUSES } from '../../domain/vocabulary.ts'
import { pageQuery } from './common.ts'

/** `GET /v1/escalations` query: which escalations (open or resolved, of which case kind), one page at a time. */
export const escalationQuery = z.strictObject({
  status: z.enum(ESCALATION_STATUSES).optional(),
  case: z.enum(ESCALATION_CASES).optional(),
  ...pageQuery,
})
