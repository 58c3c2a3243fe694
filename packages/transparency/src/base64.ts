import { platform } from './platform.ts'

/** Standard, padded base64 (RFC 4648 §4): how hashes, keys and signatures are written. */
export function encodeBase64(bytes: Uint8Array): string {
  return platform.encodeBase64(bytes)
}

const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * Decodes standard, padded base64, or returns undefined. Strict where decoders are usually lenient: no missing
 * padding, no URL-safe alphabet, no whitespace and no stray bits in the last character, so one byte string has
 * exactly one accepted spelling.
 */
export function decodeBase64(text: string): Uint8Array | undefined {
  if (!CANONICAL_BASE64.test(text)) return undefined
  const bytes = platform.decodeBase64(text)
  return platform.encodeBase64(bytes) === text ? bytes : undefined
}

/** Unpadded base64url (RFC 4648 §5), as JOSE writes key material. */
export function encodeBase64Url(bytes: Uint8Array): string {
  return encodeBase64(bytes).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')
}

/** Decodes unpadded base64url; undefined for anything else. */
export function decodeBase64Url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return undefined
  const padding = '='.repeat((4 - (text.length % 4)) % 4)
  return decodeBase64(text.replace(/-/g, '+').replace(/_/g, '/') + padding)
}
