import { canonicalJson } from './canonical-json.ts'

/**
 * SHA-256 through WebCrypto, which browsers offer only in secure contexts (HTTPS, or localhost): elsewhere the
 * console still works but shows hashes without matching them to content.
 */
export const canHash = (): boolean => globalThis.crypto?.subtle !== undefined

export async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>))
}

/** `sha256:<hex>` of JCS(value): how Arbiter names evidence items, manifests and records. */
export async function jsonHash(value: unknown): Promise<string> {
  const digest = await sha256(new TextEncoder().encode(canonicalJson(value)))
  return `sha256:${Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')}`
}
