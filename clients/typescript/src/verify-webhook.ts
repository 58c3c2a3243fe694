import { createHmac, timingSafeEqual } from 'node:crypto'
import { ArbiterVerificationError } from './errors.ts'
import type { Escalation, ManifestEnvelope, ReconciliationEnvelope, ReviewEnvelope } from './types.ts'

/** Seconds a delivery's `webhook-timestamp` may be away from now: older deliveries are refused as replays. */
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300

/** A manifest of any case kind: an outcome's, a fan-out's reconciliation or a review's. */
export type WebhookManifestEnvelope = ManifestEnvelope | ReconciliationEnvelope | ReviewEnvelope

/**
 * What Arbiter posts to a webhook: the event's type, when it happened, and what it is about — the manifest envelope,
 * or the escalation as `GET /v1/escalations` lists it with the envelope of its HALT manifest.
 */
export type WebhookEvent =
  | { type: 'manifest.issued'; timestamp: string; data: WebhookManifestEnvelope }
  | {
      type: 'escalation.opened' | 'escalation.resolved'
      timestamp: string
      data: Escalation & { envelope: WebhookManifestEnvelope }
    }
  | { type: 'webhook.test'; timestamp: string; data: { webhook_id: string } }

/**
 * A request's headers as a receiver holds them: a fetch `Headers`, Node's `IncomingHttpHeaders` (lower-case
 * names, values possibly arrays), or a plain object with any capitalisation.
 */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>

export interface VerifyWebhookOptions {
  /** Seconds the timestamp may be off in either direction (default 300). */
  toleranceSeconds?: number
  /** The current time, for tests; defaults to `Date.now()`. */
  now?: Date | number
}

const SIGNATURE_VERSION = 'v1'
const utf8 = new TextEncoder()

/**
 * Verifies one webhook delivery as the Standard Webhooks specification defines it and returns its parsed payload:
 * - `webhook-id`, `webhook-timestamp` and `webhook-signature` are present;
 * - the timestamp (Unix seconds) is within `toleranceSeconds` of now, so a captured delivery cannot be replayed
 *   later;
 * - one of the space-separated `v1,<base64>` signatures is HMAC-SHA256 under the secret of
 *   `<id>.<timestamp>.<body>`, compared in constant time. After a secret rotation a delivery carries one signature
 *   per secret, so the old and the new secret both verify it.
 * Throws ArbiterVerificationError with `check` `malformed`, `timestamp` or `signature` otherwise.
 *
 * `body` must be the bytes (or text) exactly as received: a body parsed and serialised again no longer matches.
 * `secret` is the `whsec_…` string the webhook's registration or rotation returned.
 */
export function verifyWebhook(
  headers: WebhookHeaders,
  body: string | Uint8Array,
  secret: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): WebhookEvent {
  const id = header(headers, 'webhook-id')
  const timestampText = header(headers, 'webhook-timestamp')
  const signatures = header(headers, 'webhook-signature')
  if (!/^[0-9]{1,12}$/.test(timestampText)) {
    throw new ArbiterVerificationError('malformed', 'webhook-timestamp is not a number of seconds')
  }
  const timestamp = Number(timestampText)
  const now = Math.floor(Number(options.now ?? Date.now()) / 1000)
  const tolerance = options.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS
  if (now - timestamp > tolerance) {
    throw new ArbiterVerificationError('timestamp', "the delivery's timestamp is too old")
  }
  if (timestamp - now > tolerance) {
    throw new ArbiterVerificationError('timestamp', "the delivery's timestamp is in the future")
  }
  const bodyBytes = typeof body === 'string' ? utf8.encode(body) : body
  const expected = createHmac('sha256', secretKey(secret))
    .update(`${id}.${timestamp}.`)
    .update(bodyBytes)
    .digest()
  if (!signatures.split(' ').some((entry) => matches(entry, expected))) {
    throw new ArbiterVerificationError('signature', 'no signature of the delivery matches the secret')
  }
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bodyBytes)) as WebhookEvent
  } catch (err) {
    throw new ArbiterVerificationError('malformed', 'the delivery is signed but its body is not JSON', {
      cause: err,
    })
  }
}

function matches(entry: string, expected: Buffer): boolean {
  const comma = entry.indexOf(',')
  if (comma < 0 || entry.slice(0, comma) !== SIGNATURE_VERSION) return false
  const given = Buffer.from(entry.slice(comma + 1), 'base64')
  // timingSafeEqual needs equal lengths; the length of an HMAC-SHA256 is public, so this check leaks nothing.
  return given.length === expected.length && timingSafeEqual(given, expected)
}

function secretKey(secret: string | Uint8Array): Uint8Array {
  if (typeof secret !== 'string') return secret
  const text = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret
  if (text.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length % 4 !== 0) {
    throw new ArbiterVerificationError('malformed', 'the webhook secret is not whsec_<base64>')
  }
  return Buffer.from(text, 'base64')
}

function header(headers: WebhookHeaders, name: string): string {
  let value: string | readonly string[] | null | undefined
  if (typeof (headers as Headers).get === 'function') {
    value = (headers as Headers).get(name)
  } else {
    const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>
    const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === name)
    value = key === undefined ? undefined : record[key]
  }
  if (Array.isArray(value)) value = value.join(' ')
  if (typeof value !== 'string' || value === '') {
    throw new ArbiterVerificationError('malformed', `the ${name} header is missing`)
  }
  return value
}
