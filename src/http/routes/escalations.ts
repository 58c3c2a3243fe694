import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { ESCALATION_STATUSES } from '../../domain/vocabulary.ts'
import { type EscalationView, pageEscalations } from '../../engine/escalations.ts'
import { type CaseKindModule, sharedCaseSchemas, sharedExamples } from '../case-kinds.ts'
import { authProblems, pageOf } from '../schemas/common.ts'
import { escalationQueryOf } from '../schemas/escalations.ts'

export interface EscalationRouteOptions {
  kinds: readonly CaseKindModule[]
}

/**
 * An escalation as ops see it: which case HALTed (its id under its kind's id field, null under the others'), the
 * HALT's verdict, and what the HALT carries: `subagent_id` and `run_id` when it names them, and each field a kind
 * copies from its HALTs (an outcome's divergence receipt), null when absent.
 */
function escalationSchemaOf(kinds: readonly CaseKindModule[]) {
  const { words } = sharedCaseSchemas(kinds)
  const escalating = kinds.filter((m) => words.escalationCases.includes(m.kind.name))
  const haltFields = Object.entries(
    Object.assign({}, ...escalating.map((m) => m.escalationFields ?? {})),
  ) as [string, z.ZodType][]
  const schema = z
    .object({
      case: z.enum(words.escalationCases),
      ...Object.fromEntries(escalating.map((m) => [m.idField, z.uuid().nullable()])),
      subagent_id: z.string().nullable(),
      run_id: z.string().nullable(),
      status: z.enum(ESCALATION_STATUSES),
      manifest_id: z.uuid(),
      verdict: z.enum(words.verdicts),
      ...Object.fromEntries(haltFields.map(([field, fieldSchema]) => [field, fieldSchema.nullable()])),
      opened_at: z.string(),
      resolved_at: z.string().nullable(),
    })
    .meta({ id: 'Escalation', examples: sharedExamples(kinds, (e) => e.escalation) })
  const text = (value: unknown) => (typeof value === 'string' ? value : null)
  const view = (escalation: EscalationView) => ({
    case: escalation.case,
    ...Object.fromEntries(
      escalating.map((m) => [m.idField, m.kind.name === escalation.case ? escalation.case_id : null]),
    ),
    subagent_id: text(escalation.halt.subagent_id),
    run_id: text(escalation.halt.run_id),
    status: escalation.status,
    manifest_id: escalation.manifest_id,
    verdict: escalation.verdict,
    ...Object.fromEntries(haltFields.map(([field]) => [field, escalation.halt[field] ?? null])),
    opened_at: escalation.opened_at,
    resolved_at: escalation.resolved_at,
  })
  return { schema, query: escalationQueryOf(words.escalationCases), view }
}

/** Built once per list of kinds: its component is registered by id. */
const built = new Map<string, ReturnType<typeof escalationSchemaOf>>()

/**
 * An escalation as `GET /v1/escalations` lists it, for these kinds: its schema, its query and the view that maps
 * the engine's escalation to it (webhook events carry the same view).
 */
export function escalationListing(kinds: readonly CaseKindModule[]): ReturnType<typeof escalationSchemaOf> {
  const key = kinds.map((m) => m.kind.name).join(',')
  const escalation = built.get(key) ?? escalationSchemaOf(kinds)
  built.set(key, escalation)
  return escalation
}

export const escalationRoutes: FastifyPluginAsyncZod<EscalationRouteOptions> = async (app, options) => {
  const escalation = escalationListing(options.kinds)
  app.get(
    '/v1/escalations',
    {
      config: { auth: ['ops', 'admin'] },
      schema: {
        tags: ['escalations'],
        summary: 'HALTed cases awaiting (or given) a human resolution, with what the HALT found',
        querystring: escalation.query,
        response: { 200: pageOf(escalation.schema), ...authProblems },
      },
    },
    async (request) => {
      const { status, case: caseKind, ...page } = request.query
      const escalations = await pageEscalations(app.services, { status, caseKind }, page)
      return { ...escalations, items: escalations.items.map(escalation.view) }
    },
  )
}
