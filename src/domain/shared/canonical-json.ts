import { createHash } from 'node:crypto'
import canonicalize from 'canonicalize'

/** Any value that survives a JSON round trip. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

/** `sha256:<64 lowercase hex>`: the only way hashes are written. */
export type Sha256 = `sha256:${string}`

export const SHA256_PATTERN = /^sha256:[0-9a-f]{64}$/

/** Raised for values RFC 8785 cannot represent: NaN, ±Infinity, lone surrogates, cycles. */
export class CanonicalJsonError extends Error {
  override name = 'CanonicalJsonError'
}

/** RFC 8785 (JCS) serialization. Throws CanonicalJsonError for values JCS forbids. */
export function canonicalJson(value: unknown): string {
  let text: string | undefined
  try {
    text = canonicalize(value)
  } catch (err) {
    throw new CanonicalJsonError((err as Error).message)
  }
  if (text === undefined) throw new CanonicalJsonError('value has no JSON representation')
  return text
}

export function sha256(data: string | Uint8Array): Sha256 {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`
}

/** `sha256(JCS(value))`: how every JSON value Arbiter names by hash is hashed. */
export function hashJson(value: unknown): Sha256 {
  return sha256(canonicalJson(value))
}
