import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { OUTCOME_READINGS } from '../../domain/outcome/vocabulary.ts'
import { PROBE_METHODS, probeDefinitionSchema } from '../../probes/probe-definition.ts'
import {
  dryRunProbe,
  getProbe,
  type ProbeView,
  pageProbes,
  probeById,
  registerProbe,
  replaceProbe,
} from '../../services/probes.ts'
import { caseIdBeforeBody } from '../case-exists.ts'
import { problemSchema } from '../errors.ts'
import { dryRunExample, probeDefinitionExample, probeExample } from '../examples.ts'
import { principalOf } from '../plugins/app/auth.ts'
import { answerMade } from '../route-options.ts'
import { authProblems, freeJson, idParams, pageOf, pageQuery } from '../schemas/common.ts'
import { groundTruthSchema } from '../schemas/ground-truth.ts'

const probeSchema = z
  .object({
    probe_id: z.uuid(),
    name: z.string(),
    version: z.number().int(),
    probe_digest: z.string(),
    definition: z.object({
      name: z.string(),
      request: z.object({
        method: z.enum(PROBE_METHODS),
        url: z.string(),
        headers: z.record(z.string(), z.union([z.string(), z.object({ env: z.string() })])),
      }),
      timeout_ms: z.number().int(),
      retries: z.number().int(),
      predicate: z.object({
        status: z.number().int(),
        pointer: z.string(),
        map: z.record(z.string(), z.enum(OUTCOME_READINGS)),
      }),
    }),
    created_at: z.string(),
  })
  .meta({ id: 'Probe', examples: [probeExample] }) satisfies z.ZodType<ProbeView>

const dryRunBody = z
  .strictObject({
    params: z.record(z.string(), freeJson).optional(),
    outcome: z.strictObject({ subagent_id: z.string().max(200), run_id: z.string().max(200) }).optional(),
  })
  .meta({ examples: [dryRunExample] })

/** A definition as registered, shown with an example. */
const probeBody = probeDefinitionSchema.meta({ examples: [probeDefinitionExample] })

const ADMIN = { auth: ['admin'] as const }

/** Probes over HTTP (admin only). Routes on one probe answer 404 for an unknown id before they judge the body. */
export const probeRoutes: FastifyPluginAsyncZod = async (app) => {
  const idBeforeBody = caseIdBeforeBody(app, probeById)

  app.post(
    '/v1/probes',
    {
      config: ADMIN,
      schema: {
        tags: ['probes'],
        summary: 'Register a ground-truth HTTP probe',
        body: probeBody,
        response: { 201: probeSchema, ...authProblems },
      },
    },
    answerMade((body: z.infer<typeof probeBody>, actor) => registerProbe(app.services, body, actor)),
  )

  app.put(
    '/v1/probes/:id',
    {
      config: ADMIN,
      ...idBeforeBody,
      schema: {
        tags: ['probes'],
        summary: 'Replace a probe definition (version + 1, new digest)',
        params: idParams,
        body: probeBody,
        response: { 200: probeSchema, 404: problemSchema, ...authProblems },
      },
    },
    async (request) =>
      replaceProbe(app.services, request.params.id, request.body, principalOf(request).keyId),
  )

  app.get(
    '/v1/probes',
    {
      config: ADMIN,
      schema: {
        tags: ['probes'],
        summary: 'List probes',
        querystring: z.strictObject(pageQuery),
        response: { 200: pageOf(probeSchema), ...authProblems },
      },
    },
    async (request) => pageProbes(app.services, request.query),
  )

  app.get(
    '/v1/probes/:id',
    {
      config: ADMIN,
      schema: {
        tags: ['probes'],
        summary: 'One probe, current version',
        params: idParams,
        response: { 200: probeSchema, 404: problemSchema, ...authProblems },
      },
    },
    async (request) => getProbe(app.services, request.params.id),
  )

  app.post(
    '/v1/probes/:id/dry-run',
    {
      config: ADMIN,
      ...idBeforeBody,
      schema: {
        tags: ['probes'],
        summary: 'Execute the probe now without touching any outcome (a probe error is a 200 with error set)',
        params: idParams,
        body: dryRunBody.nullish(),
        response: { 200: groundTruthSchema, 404: problemSchema, ...authProblems },
      },
    },
    async (request) =>
      dryRunProbe(
        app.services,
        request.params.id,
        { params: request.body?.params as never, outcome: request.body?.outcome },
        principalOf(request).keyId,
      ),
  )
}
