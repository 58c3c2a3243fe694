/** RFC 6901 §3: `~` is written `~0` and `/` is written `~1` (in that order, so `~1` in a key stays literal). */
export function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1')
}

/** Joins reference tokens into a JSON Pointer; no tokens is the whole document, `""`. */
export function toJsonPointer(tokens: readonly (string | number)[]): string {
  return tokens.map((token) => `/${escapePointerToken(String(token))}`).join('')
}
