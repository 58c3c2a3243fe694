import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { evaluateCase } from '../../../src/engine/evaluate-case.ts'
import { caseIdBeforeBody } from '../../../src/http/case-exists.ts'
import type { CaseRouteOptions } from '../../../src/http/case-kinds.ts'
import { caseResolutionRoute, caseStoryRoute } from '../../../src/http/case-routes.ts'
import { problemSchema } from '../../../src/http/errors.ts'
import { principalOf } from '../../../src/http/plugins/app/auth.ts'
import { authProblems, idParams } from '../../../src/http/schemas/common.ts'
import { sendEnvelope } from '../../../src/http/send-json.ts'
import { tallyCase } from './kind.ts'
import {
  tallyEnvelopeSchema,
  tallyResolutionBody,
  tallySchema,
  tallyStatusSchema,
  voteBody,
  voteSchema,
} from './schemas.ts'
import { castVote, createTally } from './service.ts'

const WRITERS = ['orchestrator', 'admin'] as const
const TAGS = ['tallies']

/** The tally's own routes, and the routes every case kind shares (resolution, story) given its words. */
export const tallyRoutes: FastifyPluginAsyncZod<CaseRouteOptions> = async (app, options) => {
  const idBeforeBody = caseIdBeforeBody(app, tallyCase)

  app.post(
    '/v1/tallies',
    {
      config: { auth: WRITERS },
      schema: { tags: TAGS, response: { 201: tallySchema, ...authProblems } },
    },
    async (request, reply) =>
      reply.code(201).send(await createTally(app.services, principalOf(request).keyId)),
  )

  app.post(
    '/v1/tallies/:id/votes',
    {
      config: { auth: WRITERS },
      ...idBeforeBody,
      schema: {
        tags: TAGS,
        params: idParams,
        body: voteBody,
        response: { 201: voteSchema, 404: problemSchema, 409: problemSchema, ...authProblems },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await castVote(app.services, request.params.id, request.body, principalOf(request).keyId)),
  )

  app.post(
    '/v1/tallies/:id/evaluate',
    {
      config: { auth: WRITERS },
      schema: {
        tags: TAGS,
        params: idParams,
        response: {
          200: tallyEnvelopeSchema,
          202: z.object({ status: z.literal('pending'), votes_needed: z.number().int() }),
          404: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const result = await evaluateCase(
        app.services,
        tallyCase,
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
    tallyCase,
    {
      path: '/v1/tallies/:id/resolution',
      summary: 'Resolve a deadlocked tally by naming the winner',
      body: tallyResolutionBody,
      envelope: tallyEnvelopeSchema,
    },
    idBeforeBody,
  )

  caseStoryRoute(
    app,
    tallyCase,
    {
      path: '/v1/audit/tallies/:id',
      summary: "One tally's story",
      idField: 'tally_id',
      status: tallyStatusSchema,
      envelope: tallyEnvelopeSchema,
    },
    options.auditRecordSchema,
  )
}
