import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { evaluateCase } from '../../engine/evaluate-case.ts'
import { AppError } from '../../errors.ts'
import { caseIdBeforeBody } from '../../http/case-exists.ts'
import type { CaseRouteOptions } from '../../http/case-kinds.ts'
import { caseResolutionRoute, caseStoryRoute } from '../../http/case-routes.ts'
import { problemSchema } from '../../http/errors.ts'
import { assertMaySpeakFor, principalOf } from '../../http/plugins/app/auth.ts'
import { authProblems, idParams, pageOf, pageQuery } from '../../http/schemas/common.ts'
import { sendEnvelope } from '../../http/send-json.ts'
import { createFanoutExample, fanoutViewExample, resolutionExample, storyExample } from './examples.ts'
import { fanoutCase } from './kind.ts'
import {
  createFanoutBody,
  fanoutPendingSchema,
  fanoutResolutionBody,
  fanoutResultBody,
  fanoutSchema,
  fanoutStatusSchema,
  reconcileFanoutBody,
  reconciliationEnvelopeSchema,
  resultAnswerSchema,
} from './schemas.ts'
import { createFanout, getFanout, pageFanouts, submitResult } from './service.ts'

const WRITERS = ['orchestrator', 'admin'] as const
const READERS = ['orchestrator', 'dashboard', 'ops', 'admin'] as const

/** The same schema, documented with examples (the OpenAPI document shows them beside the request or answer). */
const withExamples = <T extends z.ZodType>(schema: T, ...examples: unknown[]): T =>
  schema.meta({ examples }) as T

/**
 * Fan-out cases over HTTP: each handler calls one service with `app.services`. Routes on one fan-out answer 404
 * for an unknown id before they judge the body; writes are the owner's (an orchestrator key speaking for the
 * fan-out's `orchestrator_id`) or an admin's, checked after the body's schema.
 */
export const fanoutRoutes: FastifyPluginAsyncZod<CaseRouteOptions> = async (app, options) => {
  const idBeforeBody = caseIdBeforeBody(app, fanoutCase)

  app.post(
    '/v1/fanouts',
    {
      config: { auth: WRITERS },
      schema: {
        tags: ['fanouts'],
        summary:
          'Split a question into subtasks (idempotent on orchestrator_id + fanout_key); the decomposition is checked',
        body: withExamples(createFanoutBody, createFanoutExample),
        response: {
          200: fanoutSchema,
          201: fanoutSchema,
          409: problemSchema,
          422: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request)
      assertMaySpeakFor(principal, request.body.orchestrator_id)
      const { created, fanout } = await createFanout(app.services, request.body, principal.keyId)
      return reply.code(created ? 201 : 200).send(fanout)
    },
  )

  app.get(
    '/v1/fanouts',
    {
      config: { auth: READERS },
      schema: {
        tags: ['fanouts'],
        summary: 'List fan-outs, oldest first',
        querystring: z.strictObject({
          orchestrator_id: z.string().min(1).optional(),
          status: fanoutStatusSchema.optional(),
          ...pageQuery,
        }),
        response: {
          200: withExamples(pageOf(fanoutSchema), { items: [fanoutViewExample], next_cursor: null }),
          ...authProblems,
        },
      },
    },
    async (request) => {
      const { orchestrator_id, status, ...page } = request.query
      return pageFanouts(app.services, { orchestratorId: orchestrator_id, status }, page)
    },
  )

  app.get(
    '/v1/fanouts/:id',
    {
      config: { auth: READERS },
      schema: {
        tags: ['fanouts'],
        summary:
          'One fan-out: its subtasks, policy, decomposition check, latest result per subtask, manifest id',
        params: idParams,
        response: { 200: fanoutSchema, 404: problemSchema, ...authProblems },
      },
    },
    async (request) => getFanout(app.services, request.params.id),
  )

  app.post(
    '/v1/fanouts/:id/results',
    {
      config: { auth: WRITERS },
      ...idBeforeBody,
      schema: {
        tags: ['fanouts'],
        summary:
          "Submit a worker's return in the status envelope (a new revision unless identical to the subtask's latest)",
        params: idParams,
        body: fanoutResultBody,
        response: {
          200: resultAnswerSchema,
          201: resultAnswerSchema,
          404: problemSchema,
          409: problemSchema,
          422: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const result = await submitResult(app.services, request.params.id, request.body, principalOf(request))
      if (result.kind === 'refused') {
        // Audited as result.refused before this answer: the manifest stands.
        throw new AppError(
          'CONFLICT',
          'the fan-out already has a final manifest; this result was recorded as refused and changes nothing',
          { manifest_id: result.manifestId },
        )
      }
      return reply.code(result.kind === 'created' ? 201 : 200).send(result.result)
    },
  )

  app.post(
    '/v1/fanouts/:id/reconcile',
    {
      config: { auth: WRITERS },
      ...idBeforeBody,
      schema: {
        tags: ['fanouts'],
        summary:
          'Reconcile the latest results by the policy and return the signed manifest (202 while subtasks are out; {"close": true} stops waiting)',
        params: idParams,
        body: withExamples(reconcileFanoutBody, {}, { close: true }),
        response: {
          200: reconciliationEnvelopeSchema,
          202: fanoutPendingSchema,
          404: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request)
      const result = await evaluateCase(app.services, fanoutCase, request.params.id, principal.keyId, {
        request: { close: request.body?.close === true },
        // Writes to a fan-out (results, reconcile) are its owner's or an admin's.
        authorize: (fanout) => assertMaySpeakFor(principal, fanout.orchestrator_id),
      })
      if (result.kind === 'pending')
        return reply.code(202).send({ status: 'pending' as const, ...result.pending })
      return sendEnvelope(reply, 200, result.envelope)
    },
  )

  caseResolutionRoute(
    app,
    fanoutCase,
    {
      path: '/v1/fanouts/:id/resolution',
      summary:
        'Resolve a HALTed fan-out: answer every contested fact; a final HUMAN_RESOLVED manifest supersedes the HALT',
      body: withExamples(fanoutResolutionBody, resolutionExample),
      envelope: reconciliationEnvelopeSchema,
    },
    idBeforeBody,
  )

  caseStoryRoute(
    app,
    fanoutCase,
    {
      path: '/v1/audit/fanouts/:id',
      summary: "One fan-out's reconciled story: every audit record about it and its current manifest",
      idField: 'fanout_id',
      status: fanoutStatusSchema,
      envelope: reconciliationEnvelopeSchema,
      examples: [storyExample],
    },
    options.auditRecordSchema,
  )
}
