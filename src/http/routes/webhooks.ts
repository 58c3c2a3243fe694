import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  createWebhook,
  getWebhook,
  pageDeliveries,
  pageWebhooks,
  patchWebhook,
  redeliverDelivery,
  removeWebhook,
  rotateSecret,
  sendTestEvent,
  webhookById,
} from '../../webhooks/service.ts'
import { caseIdBeforeBody } from '../case-exists.ts'
import { type CaseKindModule, caseWords } from '../case-kinds.ts'
import { problemSchema } from '../errors.ts'
import { principalOf } from '../plugins/app/auth.ts'
import { authProblems, idParams, pageOf, pageQuery } from '../schemas/common.ts'
import { type WebhookEventSchemas, webhookEventSchemasOf } from '../schemas/webhook-events.ts'
import { deliveryParams, deliveryQuery, deliverySchema, webhookSchemasOf } from '../schemas/webhooks.ts'
import { escalationListing } from './escalations.ts'
import { manifestEnvelopeOf } from './manifests.ts'

const ADMIN = { auth: ['admin'] as const }
const TAGS = ['webhooks']

export interface WebhookRouteOptions {
  /** The case kinds whose manifest kinds, verdicts and directives a filter may name. */
  kinds: readonly CaseKindModule[]
}

/**
 * The bodies sent to the webhooks of an app serving these kinds, from the schemas its routes answer with (the
 * document describes them under `webhooks`).
 */
export function webhookEventsOf(kinds: readonly CaseKindModule[]): WebhookEventSchemas {
  return webhookEventSchemasOf(manifestEnvelopeOf(kinds), escalationListing(kinds).schema)
}

/** Webhooks over HTTP (admin only): registration, deliveries, redelivery, test events (docs/webhooks.md). */
export const webhookRoutes: FastifyPluginAsyncZod<WebhookRouteOptions> = async (app, options) => {
  const schemas = webhookSchemasOf(caseWords(options.kinds))
  // What is sent to the webhooks: the document describes it under `webhooks`.
  webhookEventsOf(options.kinds)
  const idBeforeBody = caseIdBeforeBody(app, webhookById)

  app.post(
    '/v1/webhooks',
    {
      config: ADMIN,
      schema: {
        tags: TAGS,
        summary: 'Register a webhook; its signing secret is shown only in this answer',
        body: schemas.createBody,
        response: { 201: schemas.webhookWithSecret, ...authProblems },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await createWebhook(app.webhooks, request.body, principalOf(request).keyId)),
  )

  app.get(
    '/v1/webhooks',
    {
      config: ADMIN,
      schema: {
        tags: TAGS,
        summary: 'List webhooks (no secrets)',
        querystring: z.strictObject(pageQuery),
        response: { 200: pageOf(schemas.webhook), ...authProblems },
      },
    },
    async (request) => pageWebhooks(app.webhooks, request.query),
  )

  app.get(
    '/v1/webhooks/:id',
    {
      config: ADMIN,
      schema: {
        tags: TAGS,
        summary: 'One webhook (no secret)',
        params: idParams,
        response: { 200: schemas.webhook, 404: problemSchema, ...authProblems },
      },
    },
    async (request) => getWebhook(app.webhooks, request.params.id),
  )

  app.patch(
    '/v1/webhooks/:id',
    {
      config: ADMIN,
      ...idBeforeBody,
      schema: {
        tags: TAGS,
        summary: 'Change a webhook; disabled: false enables it again',
        params: idParams,
        body: schemas.patchBody,
        response: { 200: schemas.webhook, 404: problemSchema, ...authProblems },
      },
    },
    async (request) =>
      patchWebhook(app.webhooks, request.params.id, request.body, principalOf(request).keyId),
  )

  app.delete(
    '/v1/webhooks/:id',
    {
      config: ADMIN,
      schema: {
        tags: TAGS,
        summary: 'Delete a webhook and its deliveries',
        params: idParams,
        response: { 204: z.null().describe('deleted'), 404: problemSchema, ...authProblems },
      },
    },
    async (request, reply) => {
      await removeWebhook(app.webhooks, request.params.id, principalOf(request).keyId)
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/v1/webhooks/:id/rotate-secret',
    {
      config: ADMIN,
      schema: {
        tags: TAGS,
        summary: 'A new signing secret; the previous one keeps signing for 24 h',
        params: idParams,
        response: { 200: schemas.webhookWithSecret, 404: problemSchema, ...authProblems },
      },
    },
    async (request) => rotateSecret(app.webhooks, request.params.id, principalOf(request).keyId),
  )

  app.get(
    '/v1/webhooks/:id/deliveries',
    {
      config: ADMIN,
      schema: {
        tags: TAGS,
        summary: "A webhook's deliveries, newest first, with each one's last attempt and next attempt",
        params: idParams,
        querystring: deliveryQuery,
        response: { 200: pageOf(deliverySchema), 404: problemSchema, ...authProblems },
      },
    },
    async (request) => {
      const { status, ...page } = request.query
      return pageDeliveries(app.webhooks, request.params.id, { status }, page)
    },
  )

  app.post(
    '/v1/webhooks/:id/deliveries/:delivery_id/redeliver',
    {
      config: ADMIN,
      schema: {
        tags: TAGS,
        summary: 'Attempt a delivery again now (a settled one is pending again)',
        params: deliveryParams,
        response: { 202: deliverySchema, 404: problemSchema, 409: problemSchema, ...authProblems },
      },
    },
    async (request, reply) =>
      reply
        .code(202)
        .send(await redeliverDelivery(app.webhooks, request.params.id, request.params.delivery_id)),
  )

  app.post(
    '/v1/webhooks/:id/test',
    {
      config: ADMIN,
      schema: {
        tags: TAGS,
        summary: 'Send a webhook.test event to this webhook alone',
        params: idParams,
        response: { 202: deliverySchema, 404: problemSchema, 409: problemSchema, ...authProblems },
      },
    },
    async (request, reply) => reply.code(202).send(await sendTestEvent(app.webhooks, request.params.id)),
  )
}
