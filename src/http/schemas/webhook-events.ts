import { z } from 'zod'
import { type WEBHOOK_EVENT_TYPES, WEBHOOK_TEST_EVENT } from '../../domain/webhooks/vocabulary.ts'

/**
 * The component each event's body is described by in the document's `webhooks` section
 * (src/http/openapi-webhooks.ts), by event type.
 */
export const WEBHOOK_EVENT_COMPONENTS = {
  'manifest.issued': 'WebhookManifestIssued',
  'escalation.opened': 'WebhookEscalationEvent',
  'escalation.resolved': 'WebhookEscalationEvent',
  [WEBHOOK_TEST_EVENT]: 'WebhookTestEvent',
} as const satisfies Record<(typeof WEBHOOK_EVENT_TYPES)[number] | typeof WEBHOOK_TEST_EVENT, string>

const timestamp = z.string().describe('RFC 3339: when the event happened, the same on every attempt')

const testEventExample = {
  type: WEBHOOK_TEST_EVENT,
  timestamp: '2026-01-05T10:00:00.000Z',
  data: { webhook_id: '2f1c1f6e-4f5a-4d8e-9a57-3c4f0b8e9d21' },
}

/**
 * The bodies Arbiter POSTs to a webhook (src/webhooks/payload.ts writes them), `{type, timestamp, data}`, from the
 * schemas the API answers with: a manifest's envelope as `GET /v1/manifests/{id}` answers it, an escalation as
 * `GET /v1/escalations` lists it. Built once per pair: the components are registered by id.
 */
export function webhookEventSchemasOf(envelope: z.ZodType, escalation: z.ZodObject): WebhookEventSchemas {
  let built = builtEvents.get(envelope)?.get(escalation)
  if (built === undefined) {
    built = buildEventSchemas(envelope, escalation)
    const byEscalation = builtEvents.get(envelope) ?? new Map()
    byEscalation.set(escalation, built)
    builtEvents.set(envelope, byEscalation)
  }
  return built
}

export type WebhookEventSchemas = ReturnType<typeof buildEventSchemas>

const builtEvents = new WeakMap<z.ZodType, Map<z.ZodObject, WebhookEventSchemas>>()

function buildEventSchemas(envelope: z.ZodType, escalation: z.ZodObject) {
  const manifestIssued = z.object({ type: z.literal('manifest.issued'), timestamp, data: envelope }).meta({
    id: WEBHOOK_EVENT_COMPONENTS['manifest.issued'],
    description: 'A manifest was issued: its envelope, the manifest byte for byte as signed',
  })
  const escalationEvent = z
    .object({
      type: z.enum(['escalation.opened', 'escalation.resolved']),
      timestamp,
      // The listed escalation's fields and one more (an intersection with the listing would forbid it: the
      // listing admits no other member).
      data: escalation.extend({ envelope }).meta({
        id: 'WebhookEscalation',
        description:
          "The escalation as GET /v1/escalations lists it, and `envelope`: its HALT manifest's envelope",
      }),
    })
    .meta({
      id: WEBHOOK_EVENT_COMPONENTS['escalation.opened'],
      description:
        'A HALT opened an escalation, or a human resolution settled it: the escalation as GET /v1/escalations lists ' +
        'it, as it was when the event happened, with its HALT manifest',
    })
  const testEvent = z
    .object({ type: z.literal(WEBHOOK_TEST_EVENT), timestamp, data: z.object({ webhook_id: z.uuid() }) })
    .meta({
      id: WEBHOOK_EVENT_COMPONENTS[WEBHOOK_TEST_EVENT],
      description: 'POST /v1/webhooks/{id}/test: to that webhook alone',
      examples: [testEventExample],
    })
  return { manifestIssued, escalationEvent, testEvent }
}
