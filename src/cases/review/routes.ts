import type { FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import {
  caseCollectionRoutes,
  caseDecisionRoute,
  caseInputOptions,
  sendInputTaken,
} from '../../http/case-collection-routes.ts'
import { caseIdBeforeBody } from '../../http/case-exists.ts'
import type { CaseRouteOptions } from '../../http/case-kinds.ts'
import { caseStoryRoute } from '../../http/case-routes.ts'
import { problemSchema } from '../../http/errors.ts'
import { assertMaySpeakFor, principalOf } from '../../http/plugins/app/auth.ts'
import { authProblems } from '../../http/schemas/common.ts'
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

  caseCollectionRoutes(app, {
    path: '/v1/reviews',
    tag: 'reviews',
    view: reviewSchema,
    create: {
      summary:
        'Put a change before a judge panel in a mode (idempotent on orchestrator_id + review_key); 422 names every panel rule broken',
      body: createReviewBody,
      owner: (body) => body.orchestrator_id,
      create: (body, actor) => createReview(app.services, body, actor),
    },
    list: {
      summary: 'List reviews, oldest first',
      ownerFilter: 'orchestrator_id',
      status: reviewStatusSchema,
      page: (orchestratorId, status, page) => pageReviews(app.services, { orchestratorId, status }, page),
    },
    show: {
      summary:
        'One review: its panel, current revision and subject, verdicts of that revision, latest manifest id',
      get: (id) => getReview(app.services, id),
    },
  })

  app.post(
    '/v1/reviews/:id/verdicts',
    caseInputOptions(idBeforeBody, {
      tag: 'reviews',
      summary:
        "Record a judge's verdict in the status report (200 for the same body again; a NEEDS_CONTEXT verdict may be replaced)",
      body: verdictBody,
      answer: verdictAnswerSchema,
    }),
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
      return sendInputTaken(reply, result)
    },
  )

  app.post(
    '/v1/reviews/:id/revisions',
    caseInputOptions(idBeforeBody, {
      tag: 'reviews',
      summary:
        'Start the next revision after a REVISE, with the revised subject; verdicts start afresh (at most two revisions)',
      body: revisionBody,
      response: {
        201: reviewSchema,
        404: problemSchema,
        409: problemSchema,
        422: problemSchema,
        ...authProblems,
      },
    }),
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

  caseDecisionRoute(
    app,
    reviewCase,
    {
      path: '/v1/reviews/:id/decide',
      tag: 'reviews',
      summary:
        'Decide the current revision and return the signed review manifest (202 while verdicts are awaited)',
      body: decideBody,
      envelope: reviewEnvelopeSchema,
      pending: reviewPendingSchema,
      options: (_body, principal) => ({
        authorize: (review: ReviewRow) => assertMaySpeakFor(principal, review.orchestrator_id),
      }),
    },
    idBeforeBody,
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
