import { hash } from 'node:crypto'
import { canonicalJson } from '@arbiter/transparency'

// RFC 8785 has one implementation in the repository, the one the clients and the console verify with.
export {
  CanonicalJsonError,
  type CanonicalPart,
  canonicalJson,
  canonicalJsonValue,
  canonicalParts,
  type JsonValue,
  rememberCanonicalJson,
  rememberCanonicalParts,
} from '@arbiter/transparency'

/** `sha256:<64 lowercase hex>`: the only way hashes are written. */
export type Sha256 = `sha256:${string}`

export const SHA256_PATTERN = /^sha256:[0-9a-f]{64}$/

export function sha256(data: string | Uint8Array): Sha256 {
  return `sha256:${hash('sha256', data, 'hex')}`
}

/** `sha256(JCS(value))`: how every JSON value Arbiter names by hash is hashed. */
export function hashJson(value: unknown): Sha256 {
  return sha256(canonicalJson(value))
}
