import { z } from 'zod'
import { ESCALATION_STATUSES } from '../../domain/vocabulary.ts'
import { pageQuery } from './common.ts'

/**
 * `GET /v1/escalations` query: which escalations (open or resolved, of which case kind), one page at a time;
 * `cases` are the kinds that escalate, the registered kinds' (src/http/case-kinds.ts). Without them (the MCP
 * server, which loads no case kind), any non-empty word: the service refuses a kind it does not know with a 400.
 */
export function escalationQueryOf(cases?: [string, ...string[]]) {
  return z.strictObject({
    status: z.enum(ESCALATION_STATUSES).optional(),
    case: (cases ? z.enum(cases) : z.string().min(1).max(200)).optional(),
    ...pageQuery,
  })
}
