import { z } from 'zod'
import {
  WEBHOOK_DELIVERY_STATUSES,
  WEBHOOK_DISABLED_REASONS,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_TEST_EVENT,
} from '../../domain/webhooks/vocabulary.ts'
import type { DeliveryView, WebhookView, WebhookWithSecret } from '../../webhooks/service.ts'
import { pageQuery } from './common.ts'

const url = z.string().min(1).max(2048).describe('http:// or https:// URL; it passes the SSRF guard')
const events = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length * 2)
  .describe('the events sent to this webhook (at least one)')
const description = z.string().max(1000)

/** The words a webhook's filter may name: those of the registered case kinds (src/http/case-kinds.ts). */
export interface FilterWords {
  manifestKinds: readonly [string, ...string[]]
  verdicts: readonly [string, ...string[]]
  directives: readonly [string, ...string[]]
}

/**
 * Filter members, AND-ed; each absent or null member matches anything. Without words (the MCP server, which loads
 * no case kind), any non-empty word: the service refuses an unknown one with a 400.
 */
function filterOf(words: FilterWords | undefined) {
  const word = (list: readonly [string, ...string[]] | undefined) =>
    list ? z.enum(list) : z.string().min(1).max(200)
  return z
    .strictObject({
      kind: word(words?.manifestKinds).nullish(),
      subagent_id: z.string().min(1).max(200).nullish(),
      verdict: word(words?.verdicts).nullish(),
      directive: word(words?.directives).nullish(),
      orchestrator_id: z
        .string()
        .min(1)
        .max(200)
        .nullish()
        .describe(
          'only cases this orchestrator takes part in: expected or interpreting (outcomes), owner (fan-outs, reviews), or action_owner',
        ),
    })
    .describe(
      'which decisions to send: every member given must match the manifest (for escalations: the HALT)',
    )
}

export const webhookCreateExample = {
  url: 'https://orchestrator.example.com/arbiter-webhook',
  events: ['manifest.issued', 'escalation.opened'],
  filter: { orchestrator_id: 'planner' },
  description: "the planner's decisions",
}

export const webhookExample = {
  webhook_id: '2f1c1f6e-4f5a-4d8e-9a57-3c4f0b8e9d21',
  url: 'https://orchestrator.example.com/arbiter-webhook',
  events: ['manifest.issued', 'escalation.opened'],
  filter: { kind: null, subagent_id: null, verdict: null, directive: null, orchestrator_id: 'planner' },
  description: "the planner's decisions",
  created_at: '2026-01-05T10:00:00.000Z',
  disabled_at: null,
  disabled_reason: null,
}

export const deliveryExample = {
  delivery_id: '8d0f6a1e-0c3b-4f55-9b55-0d2b6f0b7a10',
  event_id: 'c0a2b1f4-7d8e-4a6b-8c9d-0e1f2a3b4c5d',
  type: 'manifest.issued',
  status: 'pending',
  attempts: 2,
  next_attempt_at: '2026-01-05T10:02:35.000Z',
  last_status_code: 503,
  last_error: 'HTTP 503',
  last_attempt_at: '2026-01-05T10:00:35.000Z',
  created_at: '2026-01-05T10:00:00.000Z',
}

/** The body of `POST /v1/webhooks`, its filter naming the given words (any word without them). */
export function webhookCreateBodyOf(words?: FilterWords) {
  return z
    .strictObject({ url, events, filter: filterOf(words).nullish(), description: description.nullish() })
    .meta({ examples: [webhookCreateExample] })
}

/**
 * The webhook routes' schemas for the words of the registered case kinds, built once per list of words: the
 * components `Webhook` and `WebhookWithSecret` are registered by id, so an app of the same kinds must reuse them.
 */
export function webhookSchemasOf(words: FilterWords): WebhookSchemas {
  const key = JSON.stringify([words.manifestKinds, words.verdicts, words.directives])
  let schemas = builtSchemas.get(key)
  if (schemas === undefined) {
    schemas = buildSchemas(words)
    builtSchemas.set(key, schemas)
  }
  return schemas
}

export type WebhookSchemas = ReturnType<typeof buildSchemas>

const builtSchemas = new Map<string, WebhookSchemas>()

function buildSchemas(words: FilterWords) {
  const filter = filterOf(words)
  const patchBody = z
    .strictObject({
      url: url.optional(),
      events: events.optional(),
      filter: filter.nullish(),
      description: description.nullish(),
      disabled: z.boolean().optional().describe('true disables the webhook; false enables it again'),
    })
    .meta({ examples: [{ disabled: false }] })

  const webhookFields = {
    webhook_id: z.uuid(),
    url: z.string(),
    events: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
    filter: z.object({
      kind: z.enum(words.manifestKinds).nullable(),
      subagent_id: z.string().nullable(),
      verdict: z.enum(words.verdicts).nullable(),
      directive: z.enum(words.directives).nullable(),
      orchestrator_id: z.string().nullable(),
    }),
    description: z.string().nullable(),
    created_at: z.string(),
    disabled_at: z.string().nullable(),
    disabled_reason: z.enum(WEBHOOK_DISABLED_REASONS).nullable(),
  }

  const webhook = z
    .object(webhookFields)
    .meta({ id: 'Webhook', examples: [webhookExample] }) satisfies z.ZodType<WebhookView>

  const webhookWithSecret = z
    .object({
      ...webhookFields,
      secret: z
        .string()
        .describe(
          'whsec_…: the signing secret, shown only when the webhook is created and when it is rotated',
        ),
    })
    .meta({
      id: 'WebhookWithSecret',
      examples: [{ ...webhookExample, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
    }) satisfies z.ZodType<WebhookWithSecret>

  return { createBody: webhookCreateBodyOf(words), patchBody, webhook, webhookWithSecret }
}

export const deliverySchema = z
  .object({
    delivery_id: z.uuid(),
    event_id: z.uuid().describe('the webhook-id header of every attempt'),
    type: z.enum([...WEBHOOK_EVENT_TYPES, WEBHOOK_TEST_EVENT]),
    status: z.enum(WEBHOOK_DELIVERY_STATUSES),
    attempts: z.number().int(),
    next_attempt_at: z.string().nullable(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    last_attempt_at: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'WebhookDelivery', examples: [deliveryExample] }) satisfies z.ZodType<DeliveryView>

export const deliveryQuery = z.strictObject({
  status: z.enum(WEBHOOK_DELIVERY_STATUSES).optional(),
  ...pageQuery,
})

export const deliveryParams = z.strictObject({
  id: z.uuid({ message: 'must be a UUID' }),
  delivery_id: z.uuid({ message: 'must be a UUID' }),
})
