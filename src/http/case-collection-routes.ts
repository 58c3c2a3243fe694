import type { FastifyInstance, FastifyReply } from 'fastify'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { InputTaken } from '../engine/case-inputs.ts'
import { type EvaluationOptions, evaluateCase } from '../engine/evaluate-case.ts'
import { AppError } from '../errors.ts'
import type { Page, PageRequest } from '../pagination.ts'
import type { Actor } from '../services/context.ts'
import type { Principal } from '../services/keys.ts'
import type { AnyCaseKind } from './case-kinds.ts'
import { problemSchema } from './errors.ts'
import { assertMaySpeakFor, principalOf } from './plugins/app/auth.ts'
import { type Described, routeOptions } from './route-options.ts'
import { authProblems, idParams, pageOf, pageQuery } from './schemas/common.ts'
import { sendEnvelope } from './send-json.ts'

/*
 * The routes a case kind has on its collection, written once: create a case, list them, show one, decide one;
 * and the options of the routes that write one input to a case. A kind's routes plugin calls these with what
 * differs (its paths, schemas and services), in the place its routes list them.
 */

type ZodApp = Parameters<FastifyPluginAsyncZod>[0]

/** The kind's unknown-id-first handling of a route on one case (src/http/case-exists.ts). */
type IdBeforeBody = Partial<Parameters<FastifyInstance['post']>[1]>

/** Who writes to a case (its inputs, its decision): its orchestrator, or an admin. */
export const CASE_WRITERS = ['orchestrator', 'admin'] as const
/** Who reads cases. */
export const CASE_READERS = ['orchestrator', 'dashboard', 'ops', 'admin'] as const

/**
 * The answers of a route that takes an input: 201 with what was stored, 200 when the same input was sent before,
 * 409 and 422 refusals (`onCase`: the route names a case, which may be unknown).
 */
export function inputAnswers(answer: z.ZodType, onCase: boolean) {
  return {
    200: answer,
    201: answer,
    ...(onCase ? { 404: problemSchema } : {}),
    409: problemSchema,
    422: problemSchema,
    ...authProblems,
  }
}

/**
 * The options of a route that writes one input (evidence, a result, a verdict, …) to the case its path names: its
 * answers are `response`, or those of `inputAnswers` for the input's `answer`.
 */
export function caseInputOptions<Body extends z.ZodType, Response extends object = InputAnswers>(
  idBeforeBody: IdBeforeBody,
  route: Described & { body: Body } & ({ response: Response } | { answer: z.ZodType }),
) {
  // Given `answer`, Response is its default, InputAnswers.
  const response = ('response' in route ? route.response : inputAnswers(route.answer, true)) as Response
  return {
    ...idBeforeBody,
    ...routeOptions(CASE_WRITERS, route, { params: idParams, body: route.body, response }),
  }
}

type InputAnswers = ReturnType<typeof inputAnswers>

/**
 * Answers a route that took an input: 201 with it when new, 200 when it was there already. One that arrived after
 * the case's final manifest is on record (audited before this answer) but changes nothing: a 409 saying so
 * (`late`), naming the manifest that stands.
 */
export function sendInputTaken(reply: FastifyReply, taken: InputTaken<unknown>, late?: string): FastifyReply {
  if (taken.kind === 'late') {
    throw new AppError('CONFLICT', late ?? 'the case already has a final manifest', {
      manifest_id: taken.manifestId,
    })
  }
  return reply.code(taken.kind === 'created' ? 201 : 200).send(taken.answer)
}

/** Whether the service stored a new case (201) or found the same one under its natural key (200). */
export interface Created<View> {
  created: boolean
  view: View
}

/** A kind's cases: where they are, their OpenAPI group, how one is shown, and what its three routes need. */
export interface CaseCollection<Body, Status extends string> {
  /** `/v1/<collection>`; one case is at `/v1/<collection>/:id`. */
  path: string
  tag: string
  /** A case as the kind shows it: the answer of a create and of a read, the item of a list. */
  view: z.ZodType
  create: CaseCreate<Body>
  list: CaseList<Status>
  show: { summary: string; get: (id: string) => Promise<unknown> }
}

export interface CaseCreate<Body> {
  summary: string
  body: z.ZodType<Body>
  /** Only the orchestrator the body names (or an admin) may create it; unset, any writer may. */
  owner?: (body: Body) => string
  create: (body: Body, actor: Actor) => Promise<Created<unknown>>
}

export interface CaseList<Status extends string> {
  summary: string
  /** The query member that picks the cases of one owner: `orchestrator_id`, `subagent_id`. */
  ownerFilter: string
  status: z.ZodType<Status>
  examples?: unknown[]
  page: (owner: string | undefined, status: Status | undefined, page: PageRequest) => Promise<Page<unknown>>
}

/** Where a kind's collection is, and how it shows a case. */
type Collection = Pick<CaseCollection<unknown, string>, 'path' | 'tag' | 'view'>

/**
 * A kind's routes on its collection: POST a new case (idempotent on its natural key), GET its cases (oldest
 * first, a page at a time, of one owner or status if asked), GET one case.
 */
export function caseCollectionRoutes<Body, Status extends string>(
  app: ZodApp,
  collection: CaseCollection<Body, Status>,
) {
  caseCreateRoute(app, collection, collection.create)
  caseListRoute(app, collection, collection.list)
  const { show } = collection
  const response = { 200: collection.view, 404: problemSchema, ...authProblems }
  const schema = { params: idParams, response }
  app.get(
    `${collection.path}/:id`,
    routeOptions(CASE_READERS, { ...collection, ...show }, schema),
    async (request) => show.get(request.params.id),
  )
}

function caseCreateRoute<Body>(app: ZodApp, collection: Collection, create: CaseCreate<Body>) {
  const schema = { body: create.body, response: inputAnswers(collection.view, false) }
  app.post(
    collection.path,
    routeOptions(CASE_WRITERS, { ...collection, ...create }, schema),
    async (request, reply) => {
      const principal = principalOf(request)
      // The body as the kind's schema parsed it.
      const body = request.body as Body
      if (create.owner) assertMaySpeakFor(principal, create.owner(body))
      const { created, view } = await create.create(body, principal.keyId)
      return reply.code(created ? 201 : 200).send(view)
    },
  )
}

type ListQuery<Status> = PageRequest & { status?: Status | undefined } & Record<string, unknown>

function caseListRoute<Status extends string>(app: ZodApp, collection: Collection, list: CaseList<Status>) {
  const page = pageOf(collection.view)
  const ownerShape: z.ZodRawShape = { [list.ownerFilter]: z.string().min(1).optional() }
  const schema = {
    querystring: z.strictObject({ ...ownerShape, status: list.status.optional(), ...pageQuery }),
    response: { 200: list.examples ? page.meta({ examples: list.examples }) : page, ...authProblems },
  }
  app.get(
    collection.path,
    routeOptions(CASE_READERS, { ...collection, ...list }, schema),
    async (request) => {
      const query = request.query as ListQuery<Status>
      const owner = query[list.ownerFilter] as string | undefined
      return list.page(owner, query.status, { limit: query.limit, cursor: query.cursor })
    },
  )
}

export interface CaseDecision<Case, Body> extends Described {
  /** `/v1/<kind's collection>/:id/<decide>` */
  path: string
  body: z.ZodType<Body>
  envelope: z.ZodType
  /** What a 202 says the case waits for. */
  pending: z.ZodType
  /** Whether the kind refuses a decision with a 409 (nothing to decide). */
  conflicts?: boolean
  /** The evaluation's options for this request: who may decide it, and what the body asks for. */
  options?: (body: Body, principal: Principal) => EvaluationOptions<Case, unknown>
}

/**
 * POST a case's decision: the engine's `evaluateCase`, answered 200 with the signed manifest, or 202 while the
 * case waits for inputs.
 */
export function caseDecisionRoute<Case, Body>(
  app: ZodApp,
  kind: AnyCaseKind,
  route: CaseDecision<Case, Body>,
  idBeforeBody: IdBeforeBody,
) {
  const response = {
    200: route.envelope,
    202: route.pending,
    404: problemSchema,
    ...(route.conflicts ? { 409: problemSchema } : {}),
    ...authProblems,
  }
  app.post(route.path, caseInputOptions(idBeforeBody, { ...route, response }), async (request, reply) => {
    const principal = principalOf(request)
    const options = route.options?.(request.body as Body, principal)
    const result = await evaluateCase(app.services, kind, request.params.id, principal.keyId, options)
    if (result.kind === 'pending')
      return reply.code(202).send({ status: 'pending' as const, ...result.pending })
    return sendEnvelope(reply, 200, result.envelope)
  })
}
