const utf8Encoder = new TextEncoder()
// ignoreBOM keeps a leading U+FEFF in the text: dropping it would make two byte strings decode alike.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

export function utf8(text: string): Uint8Array {
  return utf8Encoder.encode(text)
}

/** Strict UTF-8: undefined for bytes that are not (a lossy decode would not round-trip). */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    return undefined
  }
}

export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0
  for (const part of parts) length += part.length
  const out = new Uint8Array(length)
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

export function toHex(bytes: Uint8Array): string {
  let text = ''
  for (const byte of bytes) text += byte.toString(16).padStart(2, '0')
  return text
}
