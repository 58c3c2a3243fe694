/** Standard, padded base64 (RFC 4648 §4): how hashes, keys and signatures are written. */
export function encodeBase64(bytes: Uint8Array): string {
  let binary = ''
  // In slices: String.fromCharCode takes its bytes as arguments, and arguments are limited in number.
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  }
  return btoa(binary)
}

const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * Decodes standard, padded base64, or returns undefined. Strict where decoders are usually lenient: no missing
 * padding, no URL-safe alphabet, no whitespace and no stray bits in the last character, so one byte string has
 * exactly one accepted spelling.
 */
export function decodeBase64(text: string): Uint8Array | undefined {
  if (!CANONICAL_BASE64.test(text)) return undefined
  const bytes = bytesOf(atob(text))
  return encodeBase64(bytes) === text ? bytes : undefined
}

/** Unpadded base64url (RFC 4648 §5), as JOSE writes key material. */
export function encodeBase64Url(bytes: Uint8Array): string {
  return encodeBase64(bytes).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')
}

/** Decodes unpadded base64url; undefined for anything else. */
export function decodeBase64Url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return undefined
  return bytesOf(atob(text.replace(/-/g, '+').replace(/_/g, '/')))
}

function bytesOf(binary: string): Uint8Array {
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}
