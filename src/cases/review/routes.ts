import type { FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { evaluateCase } from '../../engine/evaluate-case.ts'
import { caseIdBeforeBody } from '../../http/case-exists.ts'
import type { CaseRouteOptions } from '../../http/case-kinds.ts'
import { caseStoryRoute } from '../../http/case-routes.ts'
import { problemSchema } from '../../http/errors.ts'
import { assertMaySpeakFor, principalOf } from '../../http/plugins/app/auth.ts'
import { authProblems, idParams, pageOf, pageQuery } from '../../http/schemas/common.ts'
import { sendEnvelope } from '../../http/send-json.ts'
import { reviewCase } from './kind.ts'
import type { ReviewRow } from './repository.ts'
import {
  createReviewBody,
  decideBody,
  refuseFindingsOutsideCouncil,
  reviewEnvelopeSchema,
  reviewPendingSchema,
  reviewSchema,
  reviewStatusSchema,
  revisionBody,
  verdictAnswerSchema,
  verdictBody,
} from './schemas.ts'
import { createReview, getReview, pageReviews, startRevision, submitVerdict } from './service.ts'

const WRITERS = ['orchestrator', 'admin'] as const
const READERS = ['orchestrator', 'dashboard', 'ops', 'admin'] as const

/**
 * Reviews over HTTP: each handler calls one service with `app.services`. Writes to a review answer in the order
 * 401/403 (role), 404 (the review), 400 (the body), 403 (not the review's orchestrator), then the service's 422
 * and 409. An unknown review is a 404 before the body is judged (`caseIdBeforeBody`); a valid request needs no
 * read of its own: the service checks the review's existence and ownership (`mayWrite`) on the row it locks.
 */
export const reviewRoutes: FastifyPluginAsyncZod<CaseRouteOptions> = async (app, options) => {
  const idBeforeBody = caseIdBeforeBody(app, reviewCase)
  /** Writes are the review's orchestrator's (or admin's). */
  const mayWrite =
    (request: FastifyRequest) =>
    (review: ReviewRow): void =>
      assertMaySpeakFor(principalOf(request), review.orchestrator_id)

  app.post(
    '/v1/reviews',
    {
      config: { auth: WRITERS },
      schema: {
        tags: ['reviews'],
        summary:
          'Put a change before a judge panel in a mode (idempotent on orchestrator_id + review_key); 422 names every panel rule broken',
        body: createReviewBody,
        response: {
          200: reviewSchema,
          201: reviewSchema,
          409: problemSchema,
          422: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request)
      assertMaySpeakFor(principal, request.body.orchestrator_id)
      const { created, review } = await createReview(app.services, request.body, principal.keyId)
      return reply.code(created ? 201 : 200).send(review)
    },
  )

  app.get(
    '/v1/reviews',
    {
      config: { auth: READERS },
      schema: {
        tags: ['reviews'],
        summary: 'List reviews, oldest first',
        querystring: z.strictObject({
          orchestrator_id: z.string().min(1).optional(),
          status: reviewStatusSchema.optional(),
          ...pageQuery,
        }),
        response: { 200: pageOf(reviewSchema), ...authProblems },
      },
    },
    async (request) => {
      const { orchestrator_id, status, ...page } = request.query
      return pageReviews(app.services, { orchestratorId: orchestrator_id, status }, page)
    },
  )

  app.get(
    '/v1/reviews/:id',
    {
      config: { auth: READERS },
      schema: {
        tags: ['reviews'],
        summary:
          'One review: its panel, current revision and subject, verdicts of that revision, latest manifest id',
        params: idParams,
        response: { 200: reviewSchema, 404: problemSchema, ...authProblems },
      },
    },
    async (request) => getReview(app.services, request.params.id),
  )

  app.post(
    '/v1/reviews/:id/verdicts',
    {
      config: { auth: WRITERS },
      ...idBeforeBody,
      schema: {
        tags: ['reviews'],
        summary:
          "Record a judge's verdict in the status envelope (200 for the same body again; a NEEDS_CONTEXT verdict may be replaced)",
        params: idParams,
        body: verdictBody,
        response: {
          200: verdictAnswerSchema,
          201: verdictAnswerSchema,
          404: problemSchema,
          409: problemSchema,
          422: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const mayWriteReview = mayWrite(request)
      const result = await submitVerdict(
        app.services,
        request.params.id,
        request.body,
        principalOf(request).keyId,
        (review) => {
          // A body the review's mode refuses is still a 400, which comes before ownership.
          refuseFindingsOutsideCouncil(review.mode, request.body)
          mayWriteReview(review)
        },
      )
      return reply.code(result.kind === 'created' ? 201 : 200).send(result.verdict)
    },
  )

  app.post(
    '/v1/reviews/:id/revisions',
    {
      config: { auth: WRITERS },
      ...idBeforeBody,
      schema: {
        tags: ['reviews'],
        summary:
          'Start the next revision after a REVISE, with the revised subject; verdicts start afresh (at most two revisions)',
        params: idParams,
        body: revisionBody,
        response: {
          201: reviewSchema,
          404: problemSchema,
          409: problemSchema,
          422: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const review = await startRevision(
        app.services,
        request.params.id,
        request.body,
        principalOf(request).keyId,
        mayWrite(request),
      )
      return reply.code(201).send(review)
    },
  )

  app.post(
    '/v1/reviews/:id/decide',
    {
      config: { auth: WRITERS },
      ...idBeforeBody,
      schema: {
        tags: ['reviews'],
        summary:
          'Decide the current revision and return the signed review manifest (202 while verdicts are awaited)',
        params: idParams,
        body: decideBody,
        response: {
          200: reviewEnvelopeSchema,
          202: reviewPendingSchema,
          404: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const result = await evaluateCase(
        app.services,
        reviewCase,
        request.params.id,
        principalOf(request).keyId,
        { authorize: mayWrite(request) },
      )
      if (result.kind === 'pending')
        return reply.code(202).send({ status: 'pending' as const, ...result.pending })
      return sendEnvelope(reply, 200, result.envelope)
    },
  )

  caseStoryRoute(
    app,
    reviewCase,
    {
      path: '/v1/audit/reviews/:id',
      summary: "One review's story: every audit record about it and its latest manifest",
      idField: 'review_id',
      status: reviewStatusSchema,
      envelope: reviewEnvelopeSchema,
    },
    options.auditRecordSchema,
  )
}
