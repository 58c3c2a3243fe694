import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { evaluateCase } from '../../engine/evaluate-case.ts'
import { AppError } from '../../errors.ts'
import { afterPathId, caseIdBeforeBody } from '../../http/case-exists.ts'
import type { CaseRouteOptions } from '../../http/case-kinds.ts'
import { type CaseStory, caseResolutionRoute, caseStoryRoute } from '../../http/case-routes.ts'
import { problemSchema } from '../../http/errors.ts'
import { assertMaySpeakFor, principalOf } from '../../http/plugins/app/auth.ts'
import { authProblems, idParams, pageOf, pageQuery } from '../../http/schemas/common.ts'
import { sendEnvelope } from '../../http/send-json.ts'
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

const WRITERS = ['orchestrator', 'admin'] as const
const READERS = ['orchestrator', 'dashboard', 'ops', 'admin'] as const
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

  app.post(
    '/v1/outcomes',
    {
      config: { auth: WRITERS },
      schema: {
        tags: ['outcomes'],
        summary: 'Record a sub-agent result and its evidence (idempotent on subagent_id + run_id)',
        body: createOutcomeBody,
        response: {
          200: outcomeSchema,
          201: outcomeSchema,
          409: problemSchema,
          422: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const { created, outcome } = await createOutcome(app.services, request.body, principalOf(request).keyId)
      return reply.code(created ? 201 : 200).send(outcome)
    },
  )

  app.get(
    '/v1/outcomes',
    {
      config: { auth: READERS },
      schema: {
        tags: ['outcomes'],
        summary: 'List outcomes, oldest first',
        querystring: z.strictObject({
          subagent_id: z.string().min(1).optional(),
          status: outcomeStatusSchema.optional(),
          ...pageQuery,
        }),
        response: { 200: pageOf(outcomeSchema), ...authProblems },
      },
    },
    async (request) => {
      const { subagent_id, status, ...page } = request.query
      return pageOutcomes(app.services, { subagentId: subagent_id, status }, page)
    },
  )

  app.get(
    '/v1/outcomes/:id',
    {
      config: { auth: READERS },
      schema: {
        tags: ['outcomes'],
        summary:
          'One outcome: evidence versions, latest interpretation per orchestrator, current manifest id',
        params: idParams,
        response: { 200: outcomeSchema, 404: problemSchema, ...authProblems },
      },
    },
    async (request) => getOutcome(app.services, request.params.id),
  )

  app.post(
    '/v1/outcomes/:id/evidence',
    {
      config: { auth: WRITERS },
      ...idBeforeBody,
      schema: {
        tags: ['outcomes'],
        summary:
          'Add evidence items; the outcome gets a new evidence_hash over the union (200 when nothing new)',
        params: idParams,
        body: appendEvidenceBody,
        response: {
          200: outcomeSchema,
          201: outcomeSchema,
          404: problemSchema,
          409: problemSchema,
          ...authProblems,
        },
      },
    },
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
    {
      config: { auth: WRITERS },
      ...idBeforeBody,
      schema: {
        tags: ['interpretations'],
        summary: "Submit an orchestrator's interpretation (a new revision unless identical to its latest)",
        params: idParams,
        body: interpretationBody,
        response: {
          200: interpretationCreatedSchema,
          201: interpretationCreatedSchema,
          404: problemSchema,
          409: problemSchema,
          422: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request)
      await afterPathId(app, outcomeCase, request.params.id, () =>
        assertMaySpeakFor(principal, request.body.orchestrator_id),
      )
      const result = await submitInterpretation(app.services, request.params.id, request.body, principal)
      if (result.kind === 'dissent') {
        // Stored and audited before this answer: the decision stands, the dissent is on record.
        throw new AppError(
          'CONFLICT',
          'the outcome already has a final decision; this interpretation was recorded as dissent and does not change it',
          { manifest_id: result.manifestId },
        )
      }
      return reply.code(result.kind === 'created' ? 201 : 200).send(result.interpretation)
    },
  )

  app.post(
    '/v1/outcomes/:id/evaluate',
    {
      config: { auth: WRITERS },
      ...idBeforeBody,
      schema: {
        tags: ['evaluation'],
        summary:
          'Decide by the written procedure and return the signed manifest (202 while waiting for orchestrators)',
        params: idParams,
        body: z
          .strictObject({})
          .nullish()
          .meta({ description: 'Nothing to send: the body may be left out, or be {}', examples: [{}] }),
        response: {
          200: outcomeEnvelopeSchema,
          202: pendingSchema,
          404: problemSchema,
          409: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const result = await evaluateCase(
        app.services,
        outcomeCase,
        request.params.id,
        principalOf(request).keyId,
      )
      if (result.kind === 'pending')
        return reply.code(202).send({ status: 'pending' as const, ...result.pending })
      return sendEnvelope(reply, 200, result.envelope)
    },
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

  app.put(
    '/v1/subagents/:subagent_id/policy',
    {
      config: { auth: ADMIN },
      schema: {
        tags: ['policies'],
        summary:
          "Set the sub-agent's policy: the rules every new outcome of it takes (existing outcomes keep theirs)",
        params: subagentParams,
        body: subagentPolicyBody,
        response: { 200: subagentPolicySchema, 422: problemSchema, ...authProblems },
      },
    },
    async (request) =>
      setSubagentPolicy(app.services, request.params.subagent_id, request.body, principalOf(request).keyId),
  )

  app.get(
    '/v1/subagents/:subagent_id/policy',
    {
      config: { auth: ADMIN },
      schema: {
        tags: ['policies'],
        summary: "The sub-agent's policy",
        params: subagentParams,
        response: { 200: subagentPolicySchema, 404: problemSchema, ...authProblems },
      },
    },
    async (request) => getSubagentPolicy(app.services, request.params.subagent_id),
  )

  app.delete(
    '/v1/subagents/:subagent_id/policy',
    {
      config: { auth: ADMIN },
      schema: {
        tags: ['policies'],
        summary: "Remove the sub-agent's policy: its next outcomes set their own rules again",
        params: subagentParams,
        response: { 204: z.null().describe('Removed'), 404: problemSchema, ...authProblems },
      },
    },
    async (request, reply) => {
      await removeSubagentPolicy(app.services, request.params.subagent_id, principalOf(request).keyId)
      return reply.code(204).send(null)
    },
  )
}
