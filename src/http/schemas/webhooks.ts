import { z } from 'zod'
import { MANIFEST_DIRECTIVES, MANIFEST_KINDS, MANIFEST_VERDICTS } from '../../domain/vocabulary.ts'
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

/** Filter members, AND-ed; each absent or null member matches anything. */
const filter = z
  .strictObject({
    kind: z.enum(MANIFEST_KINDS).nullish(),
    subagent_id: z.string().min(1).max(200).nullish(),
    verdict: z.enum(MANIFEST_VERDICTS).nullish(),
    directive: z.enum(MANIFEST_DIRECTIVES).nullish(),
    orchestrator_id: z
      .string()
      .min(1)
      .max(200)
      .nullish()
      .describe(
        'only cases this orchestrator takes part in: expected or interpreting (outcomes), owner (fan-outs, reviews), or action_owner',
      ),
  })
  .describe('which decisions to send: every member given must match the manifest (for escalations: the HALT)')

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

export const webhookCreateBody = z
  .strictObject({ url, events, filter: filter.nullish(), description: description.nullish() })
  .meta({ examples: [webhookCreateExample] })

export const webhookPatchBody = z
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
    kind: z.enum(MANIFEST_KINDS).nullable(),
    subagent_id: z.string().nullable(),
    verdict: z.enum(MANIFEST_VERDICTS).nullable(),
    directive: z.enum(MANIFEST_DIRECTIVES).nullable(),
    orchestrator_id: z.string().nullable(),
  }),
  description: z.string().nullable(),
  created_at: z.string(),
  disabled_at: z.string().nullable(),
  disabled_reason: z.enum(WEBHOOK_DISABLED_REASONS).nullable(),
}

export const webhookSchema = z
  .object(webhookFields)
  .meta({ id: 'Webhook', examples: [webhookExample] }) satisfies z.ZodType<WebhookView>

export const webhookWithSecretSchema = z
  .object({
    ...webhookFields,
    secret: z
      .string()
      .describe('whsec_…: the signing secret, shown only when the webhook is created and when it is rotated'),
  })
  .meta({
    id: 'WebhookWithSecret',
    examples: [{ ...webhookExample, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
  }) satisfies z.ZodType<WebhookWithSecret>

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
