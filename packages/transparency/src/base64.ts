/** Standard, padded base64 (RFC 4648 §4): how hashes, keys and signatures are written. */
export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')
}

const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * Decodes standard, padded base64, or returns undefined. Strict where Buffer is lenient: no missing
 * padding, no URL-safe alphabet, no whitespace and no stray bits in the last character, so one byte
 * string has exactly one accepted spelling.
 */
export function decodeBase64(text: string): Uint8Array | undefined {
  if (!CANONICAL_BASE64.test(text)) return undefined
  const bytes = Buffer.from(text, 'base64')
  return bytes.toString('base64') === text ? bytes : undefined
}
