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

/**
 * RFC 8785 for values that came out of JSON.parse (plain objects, arrays, strings, finite numbers, booleans,
 * null), several times faster than the general serializer: no cycle tracking, and the lone-surrogate check is
 * the engine's. Equal to `canonicalJson` on every such value (a property test holds it to that); the audit log
 * canonicalizes every record with it, twice per record when verifying.
 */
export function canonicalJsonValue(value: JsonValue): string {
  // undefined only as an array element (as JSON.stringify writes it); members that are undefined are skipped below.
  if (value === null || value === undefined) return 'null'
  switch (typeof value) {
    case 'string':
      if (!(value as unknown as { isWellFormed(): boolean }).isWellFormed()) {
        throw new CanonicalJsonError('Lone surrogate is not allowed')
      }
      return JSON.stringify(value)
    case 'number':
      if (!Number.isFinite(value)) throw new CanonicalJsonError(`${value} is not allowed`)
      return JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    default: {
      if (Array.isArray(value)) {
        let text = '['
        for (let i = 0; i < value.length; i++) text += (i === 0 ? '' : ',') + canonicalJsonValue(value[i]!)
        return `${text}]`
      }
      let text = '{'
      let first = true
      // Default sort compares UTF-16 code units, which is the order RFC 8785 prescribes for member names.
      for (const key of Object.keys(value).sort()) {
        const member = value[key]
        if (member === undefined) continue
        text += `${first ? '' : ','}${canonicalJsonValue(key)}:${canonicalJsonValue(member)}`
        first = false
      }
      return `${text}}`
    }
  }
}

export function sha256(data: string | Uint8Array): Sha256 {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`
}

/** `sha256(JCS(value))`: how every JSON value Arbiter names by hash is hashed. */
export function hashJson(value: unknown): Sha256 {
  return sha256(canonicalJson(value))
}
