/**
 * The OpenAPI document's `webhooks` section: what Arbiter POSTs to a registered webhook, one operation per event
 * type, each body a component the webhook routes register (src/http/schemas/webhook-events.ts), and the Standard
 * Webhooks headers every request carries.
 */

import { type WEBHOOK_EVENT_TYPES, WEBHOOK_TEST_EVENT } from '../domain/webhooks/vocabulary.ts'
import { WEBHOOK_EVENT_COMPONENTS } from './schemas/webhook-events.ts'

type Json = Record<string, unknown>

const HEADERS: Json[] = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: "The event's id: the same on every attempt, so a receiver deduplicates on it",
    schema: { type: 'string', format: 'uuid' },
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Unix seconds of this attempt; a receiver refuses one too far from its clock',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      '`v1,<base64 HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>`, the key being the base64 after ' +
      "`whsec_` in the webhook's secret; for 24 hours after a rotation, two of them separated by a space (either " +
      'secret verifies). Any Standard Webhooks library checks it',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$' },
  },
]

const SENT_WHEN: Record<(typeof WEBHOOK_EVENT_TYPES)[number] | typeof WEBHOOK_TEST_EVENT, [string, string]> =
  {
    'manifest.issued': ['receiveManifestIssued', 'A manifest of any kind was issued'],
    'escalation.opened': ['receiveEscalationOpened', 'A HALT opened an escalation'],
    'escalation.resolved': ['receiveEscalationResolved', 'A human resolution settled an escalation'],
    [WEBHOOK_TEST_EVENT]: ['receiveWebhookTest', 'POST /v1/webhooks/{id}/test was called for this webhook'],
  }

function eventOperation(type: keyof typeof SENT_WHEN): Json {
  const [operationId, summary] = SENT_WHEN[type]
  return {
    post: {
      operationId,
      tags: ['webhooks'],
      summary,
      description:
        `Sent as \`${type}\` to every enabled webhook subscribed to it whose filter matches, at least once: ` +
        'retried with backoff until a 2xx answers within 10 s or the maximum age passes. Redirects are not followed.',
      // The receiver authenticates Arbiter by the signature, not by a key of Arbiter's.
      security: [],
      parameters: HEADERS,
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: { $ref: `#/components/schemas/${WEBHOOK_EVENT_COMPONENTS[type]}` } },
        },
      },
      responses: {
        '2XX': {
          description: 'Received: the delivery succeeded (the body is read up to 64 KiB and ignored)',
        },
        '410': { description: 'Gone: the webhook is disabled at once and its pending deliveries fail' },
        default: { description: 'Any other answer, a network error or a timeout: the attempt is retried' },
      },
    },
  }
}

/**
 * The `webhooks` section for a document whose components describe the event bodies (an app serving the webhook
 * routes), or undefined.
 */
export function webhooksSection(schemas: Record<string, unknown> | undefined): Json | undefined {
  const types = Object.keys(SENT_WHEN) as (keyof typeof SENT_WHEN)[]
  if (!types.every((type) => schemas?.[WEBHOOK_EVENT_COMPONENTS[type]] !== undefined)) return undefined
  return Object.fromEntries(types.map((type) => [type, eventOperation(type)]))
}
