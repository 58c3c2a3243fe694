import type { FastifyInstance } from 'fastify'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { caseStory } from '../engine/case-story.ts'
import { resolveCase } from '../engine/resolve-case.ts'
import type { AnyCaseKind } from './case-kinds.ts'
import { problemSchema } from './errors.ts'
import { principalOf } from './plugins/app/auth.ts'
import { authProblems, idParams } from './schemas/common.ts'
import { sendCaseStory, sendEnvelope } from './send-json.ts'

/*
 * The routes every case kind has, written once: a kind's routes plugin calls these with what differs (its path,
 * its words, its schemas), in the place its routes list them.
 */

type ZodApp = Parameters<FastifyPluginAsyncZod>[0]

const OPS = ['ops', 'admin'] as const

export interface CaseStory {
  /** `/v1/audit/<kind's collection>/:id` */
  path: string
  summary: string
  /** How the story names its case: `outcome_id`. */
  idField: string
  status: z.ZodType
  envelope: z.ZodType
  examples?: unknown[]
}

/** The answer of a case's story: `{<idField>, status, records, manifest}`. */
export function caseStorySchema(story: CaseStory, auditRecord: z.ZodType) {
  const schema = z.object({
    [story.idField]: z.uuid(),
    status: story.status,
    records: z.array(auditRecord),
    manifest: story.envelope.nullable(),
  })
  return story.examples ? schema.meta({ examples: story.examples }) : schema
}

/** GET a case's story: every audit record about it and its current manifest (ops). */
export function caseStoryRoute(app: ZodApp, kind: AnyCaseKind, story: CaseStory, auditRecord: z.ZodType) {
  app.get(
    story.path,
    {
      config: { auth: OPS },
      schema: {
        tags: ['audit'],
        summary: story.summary,
        params: idParams,
        response: { 200: caseStorySchema(story, auditRecord), 404: problemSchema, ...authProblems },
      },
    },
    async (request, reply) =>
      sendCaseStory(reply, story.idField, await caseStory(app.services, kind, request.params.id)),
  )
}

export interface CaseResolution {
  /** `/v1/<kind's collection>/:id/resolution` */
  path: string
  summary: string
  /** The human's answer, as the kind's `resolution` handler takes it. */
  body: z.ZodType
  envelope: z.ZodType
}

/**
 * POST a human's resolution of a HALTed case (ops): the engine's `resolveCase`, answered 201 with the
 * HUMAN_RESOLVED manifest. `idBeforeBody` is the kind's unknown-id-first handling (src/http/case-exists.ts).
 */
export function caseResolutionRoute(
  app: ZodApp,
  kind: AnyCaseKind,
  resolution: CaseResolution,
  idBeforeBody: Partial<Parameters<FastifyInstance['post']>[1]>,
) {
  app.post(
    resolution.path,
    {
      config: { auth: OPS },
      ...idBeforeBody,
      schema: {
        tags: ['escalations'],
        summary: resolution.summary,
        params: idParams,
        body: resolution.body,
        response: {
          201: resolution.envelope,
          404: problemSchema,
          409: problemSchema,
          422: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request, reply) => {
      const envelope = await resolveCase(
        app.services,
        kind,
        request.params.id,
        request.body,
        principalOf(request).keyId,
      )
      return sendEnvelope(reply, 201, envelope)
    },
  )
}
