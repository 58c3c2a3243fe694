import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import type { z } from 'zod'
import {
  caseCollectionRoutes,
  caseDecisionRoute,
  caseInputOptions,
  sendInputTaken,
} from '../../http/case-collection-routes.ts'
import { caseIdBeforeBody } from '../../http/case-exists.ts'
import type { CaseRouteOptions } from '../../http/case-kinds.ts'
import { caseResolutionRoute, caseStoryRoute } from '../../http/case-routes.ts'
import { assertMaySpeakFor, principalOf } from '../../http/plugins/app/auth.ts'
import { createFanoutExample, fanoutViewExample, resolutionExample, storyExample } from './examples.ts'
import { fanoutCase } from './kind.ts'
import type { FanoutRow } from './repository.ts'
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

  caseCollectionRoutes(app, {
    path: '/v1/fanouts',
    tag: 'fanouts',
    view: fanoutSchema,
    create: {
      summary:
        'Split a question into subtasks (idempotent on orchestrator_id + fanout_key); the decomposition is checked',
      body: withExamples(createFanoutBody, createFanoutExample),
      owner: (body) => body.orchestrator_id,
      create: (body, actor) => createFanout(app.services, body, actor),
    },
    list: {
      summary: 'List fan-outs, oldest first',
      ownerFilter: 'orchestrator_id',
      status: fanoutStatusSchema,
      examples: [{ items: [fanoutViewExample], next_cursor: null }],
      page: (orchestratorId, status, page) => pageFanouts(app.services, { orchestratorId, status }, page),
    },
    show: {
      summary:
        'One fan-out: its subtasks, policy, decomposition check, latest result per subtask, manifest id',
      get: (id) => getFanout(app.services, id),
    },
  })

  app.post(
    '/v1/fanouts/:id/results',
    caseInputOptions(idBeforeBody, {
      tag: 'fanouts',
      summary:
        "Submit a worker's return in the status report (a new revision unless identical to the subtask's latest)",
      body: fanoutResultBody,
      answer: resultAnswerSchema,
    }),
    async (request, reply) =>
      sendInputTaken(
        reply,
        await submitResult(app.services, request.params.id, request.body, principalOf(request)),
        'the fan-out already has a final manifest; this result was recorded as refused and changes nothing',
      ),
  )

  caseDecisionRoute(
    app,
    fanoutCase,
    {
      path: '/v1/fanouts/:id/reconcile',
      tag: 'fanouts',
      summary:
        'Reconcile the latest results by the policy and return the signed manifest (202 while subtasks are out; {"close": true} stops waiting)',
      body: withExamples(reconcileFanoutBody, {}, { close: true }),
      envelope: reconciliationEnvelopeSchema,
      pending: fanoutPendingSchema,
      options: (body, principal) => ({
        request: { close: body?.close === true },
        // Writes to a fan-out (results, reconcile) are its owner's or an admin's.
        authorize: (fanout: FanoutRow) => assertMaySpeakFor(principal, fanout.orchestrator_id),
      }),
    },
    idBeforeBody,
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
