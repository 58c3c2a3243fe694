import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  caseCollectionRoutes,
  caseDecisionRoute,
  caseInputOptions,
  sendInputTaken,
} from '../../http/case-collection-routes.ts'
import { afterPathId, caseIdBeforeBody } from '../../http/case-exists.ts'
import type { CaseRouteOptions } from '../../http/case-kinds.ts'
import { type CaseStory, caseResolutionRoute, caseStoryRoute } from '../../http/case-routes.ts'
import { problemSchema } from '../../http/errors.ts'
import { assertMaySpeakFor, principalOf } from '../../http/plugins/app/auth.ts'
import { routeOptions } from '../../http/route-options.ts'
import { authProblems } from '../../http/schemas/common.ts'
import { createOutcome } from './creation.ts'
import { appendEvidence } from './evidence.ts'
import { outcomeStoryExample } from './examples.ts'
import { submitInterpretation } from './interpretations.ts'
import { outcomeCase } from './kind.ts'
import {
  appendEvidenceBody,
  createOutcomeBody,
  interpretationBody,
  interpretationCreatedSchema,
  outcomeEnvelopeSchema,
  outcomeSchema,
  outcomeStatusSchema,
  pendingSchema,
  resolutionBody,
  subagentParams,
  subagentPolicyBody,
  subagentPolicySchema,
} from './schemas.ts'
import { getSubagentPolicy, removeSubagentPolicy, setSubagentPolicy } from './subagent-policies.ts'
import { getOutcome, pageOutcomes } from './views.ts'

const ADMIN = ['admin'] as const

export const OUTCOME_STORY: CaseStory = {
  path: '/v1/audit/outcomes/:id',
  summary: "One outcome's reconciled story: every audit record about it and its current manifest",
  idField: 'outcome_id',
  status: outcomeStatusSchema,
  envelope: outcomeEnvelopeSchema,
  examples: [outcomeStoryExample],
}

/**
 * Outcome cases over HTTP: each handler calls one service with `app.services`. Routes on one outcome answer 404
 * for an unknown id before they judge the body, and before refusing an interpretation under another
 * orchestrator's id.
 */
export const outcomeRoutes: FastifyPluginAsyncZod<CaseRouteOptions> = async (app, options) => {
  const idBeforeBody = caseIdBeforeBody(app, outcomeCase)

  caseCollectionRoutes(app, {
    path: '/v1/outcomes',
    tag: 'outcomes',
    view: outcomeSchema,
    create: {
      summary: 'Record a sub-agent result and its evidence (idempotent on subagent_id + run_id)',
      body: createOutcomeBody,
      create: (body, actor) => createOutcome(app.services, body, actor),
    },
    list: {
      summary: 'List outcomes, oldest first',
      ownerFilter: 'subagent_id',
      status: outcomeStatusSchema,
      page: (subagentId, status, page) => pageOutcomes(app.services, { subagentId, status }, page),
    },
    show: {
      summary: 'One outcome: evidence versions, latest interpretation per orchestrator, current manifest id',
      get: (id) => getOutcome(app.services, id),
    },
  })

  app.post(
    '/v1/outcomes/:id/evidence',
    caseInputOptions(idBeforeBody, {
      tag: 'outcomes',
      summary:
        'Add evidence items; the outcome gets a new evidence_hash over the union (200 when nothing new)',
      body: appendEvidenceBody,
      response: {
        200: outcomeSchema,
        201: outcomeSchema,
        404: problemSchema,
        409: problemSchema,
        ...authProblems,
      },
    }),
    async (request, reply) => {
      const { outcome } = await appendEvidence(
        app.services,
        request.params.id,
        request.body.evidence,
        principalOf(request).keyId,
      )
      return reply.code(201).send(outcome)
    },
  )

  app.post(
    '/v1/outcomes/:id/interpretations',
    caseInputOptions(idBeforeBody, {
      tag: 'interpretations',
      summary: "Submit an orchestrator's interpretation (a new revision unless identical to its latest)",
      body: interpretationBody,
      answer: interpretationCreatedSchema,
    }),
    async (request, reply) => {
      const principal = principalOf(request)
      await afterPathId(app, outcomeCase, request.params.id, () =>
        assertMaySpeakFor(principal, request.body.orchestrator_id),
      )
      return sendInputTaken(
        reply,
        await submitInterpretation(app.services, request.params.id, request.body, principal),
        'the outcome already has a final decision; this interpretation was recorded as dissent and does not change it',
      )
    },
  )

  caseDecisionRoute(
    app,
    outcomeCase,
    {
      path: '/v1/outcomes/:id/evaluate',
      tag: 'evaluation',
      summary:
        'Decide by the written procedure and return the signed manifest (202 while waiting for orchestrators)',
      body: z
        .strictObject({})
        .nullish()
        .meta({ description: 'Nothing to send: the body may be left out, or be {}', examples: [{}] }),
      envelope: outcomeEnvelopeSchema,
      pending: pendingSchema,
      conflicts: true,
    },
    idBeforeBody,
  )

  caseResolutionRoute(
    app,
    outcomeCase,
    {
      path: '/v1/outcomes/:id/resolution',
      summary: 'Resolve a HALTed outcome: a final HUMAN_RESOLVED manifest that supersedes the HALT',
      body: resolutionBody,
      envelope: outcomeEnvelopeSchema,
    },
    idBeforeBody,
  )

  caseStoryRoute(app, outcomeCase, OUTCOME_STORY, options.auditRecordSchema)

  // A sub-agent's policy: admin only, in the `policies` group, the sub-agent named by the path.
  const policyPath = '/v1/subagents/:subagent_id/policy'
  const policyRoute = <Schema extends object>(summary: string, schema: Schema) =>
    routeOptions(ADMIN, { tag: 'policies', summary }, { params: subagentParams, ...schema })

  app.put(
    policyPath,
    policyRoute(
      "Set the sub-agent's policy: the rules every new outcome of it takes (existing outcomes keep theirs)",
      {
        body: subagentPolicyBody,
        response: { 200: subagentPolicySchema, 422: problemSchema, ...authProblems },
      },
    ),
    async (request) =>
      setSubagentPolicy(app.services, request.params.subagent_id, request.body, principalOf(request).keyId),
  )

  app.get(
    policyPath,
    policyRoute("The sub-agent's policy", {
      response: { 200: subagentPolicySchema, 404: problemSchema, ...authProblems },
    }),
    async (request) => getSubagentPolicy(app.services, request.params.subagent_id),
  )

  app.delete(
    policyPath,
    policyRoute("Remove the sub-agent's policy: its next outcomes set their own rules again", {
      response: { 204: z.null().describe('Removed'), 404: problemSchema, ...authProblems },
    }),
    async (request, reply) => {
      await removeSubagentPolicy(app.services, request.params.subagent_id, principalOf(request).keyId)
      return reply.code(204).send(null)
    },
  )
}
