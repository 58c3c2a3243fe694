import { createHmac } from 'node:crypto'

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): a secret is `whsec_` + base64 of its key bytes; a
 * signature is `v1,` + base64 of HMAC-SHA256(key, `<webhook-id>.<webhook-timestamp>.<body>`); the
 * `webhook-signature` header lists one signature per secret, separated by spaces, so a receiver holding either
 * secret of a rotation verifies. Pure: the caller supplies the secrets, the id, the time and the body.
 */
export const SECRET_PREFIX = 'whsec_'

/** Key bytes of a secret: between 24 and 64, as the specification asks. */
export const SECRET_MIN_BYTES = 24
export const SECRET_MAX_BYTES = 64

/** `whsec_<base64>` of the key bytes given. */
export function encodeSecret(key: Uint8Array): string {
  if (key.length < SECRET_MIN_BYTES || key.length > SECRET_MAX_BYTES) {
    throw new RangeError(
      `a webhook secret has ${SECRET_MIN_BYTES} to ${SECRET_MAX_BYTES} bytes, not ${key.length}`,
    )
  }
  return SECRET_PREFIX + Buffer.from(key).toString('base64')
}

/** The key bytes of a `whsec_…` secret (the prefix is optional, as the libraries accept). */
export function decodeSecret(secret: string): Buffer {
  const base64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret
  return Buffer.from(base64, 'base64')
}

/** One `v1,<base64>` signature of the message. `timestampSeconds` is the `webhook-timestamp` header's value. */
export function signatureOf(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', decodeSecret(secret))
    .update(`${id}.${timestampSeconds}.`)
    .update(body)
    .digest('base64')
  return `v1,${mac}`
}

/** The three Standard Webhooks headers of one attempt, signed with every secret given (current first). */
export function webhookHeaders(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((secret) => signatureOf(secret, id, timestampSeconds, body)).join(' '),
  }
}
