import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { escalationExample } from '../../cases/outcome/examples.ts'
import { divergenceReceiptSchema } from '../../cases/outcome/schemas.ts'
import { ESCALATION_CASES, ESCALATION_STATUSES, MANIFEST_VERDICTS } from '../../domain/vocabulary.ts'
import { type EscalationView, pageEscalations } from '../../engine/escalations.ts'
import { authProblems, pageOf } from '../schemas/common.ts'
import { escalationQuery } from '../schemas/escalations.ts'

const escalationSchema = z
  .object({
    case: z.enum(ESCALATION_CASES),
    outcome_id: z.uuid().nullable(),
    fanout_id: z.uuid().nullable(),
    subagent_id: z.string().nullable(),
    run_id: z.string().nullable(),
    status: z.enum(ESCALATION_STATUSES),
    manifest_id: z.uuid(),
    verdict: z.enum(MANIFEST_VERDICTS),
    interpretation_divergence_receipt: divergenceReceiptSchema.nullable(),
    opened_at: z.string(),
    resolved_at: z.string().nullable(),
  })
  .meta({ id: 'Escalation', examples: [escalationExample] }) satisfies z.ZodType<EscalationView>

export const escalationRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/v1/escalations',
    {
      config: { auth: ['ops', 'admin'] },
      schema: {
        tags: ['escalations'],
        summary: 'HALTed cases awaiting (or given) a human resolution, with what the HALT found',
        querystring: escalationQuery,
        response: { 200: pageOf(escalationSchema), ...authProblems },
      },
    },
    async (request) => {
      const { status, case: caseKind, ...page } = request.query
      return pageEscalations(app.services, { status, caseKind }, page)
    },
  )
}
