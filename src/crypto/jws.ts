import { KeyObject, sign } from 'node:crypto'
import { JwsError, verifyCompactJws, verifyManifestEnvelope } from '@arbiter/transparency'
import type { JWK } from 'jose'
import { canonicalJson } from '../domain/shared/canonical-json.ts'
import type { SigningKey } from './signing-key.ts'

/** A JSON Web Key Set (RFC 7517 §5), as served at `/.well-known/jwks.json`. */
export interface Jwks {
  keys: JWK[]
}

export type VerifyResult = { ok: true; kid: string } | { ok: false; reason: string }

/**
 * Compact JWS (RFC 7515) over `JCS(value)`: protected header exactly `{alg: 'Ed25519', kid}`.
 * jose ≥ 6 implements the fully specified `Ed25519` alg of RFC 9864.
 */
export async function signCanonical(value: unknown, key: SigningKey): Promise<string> {
  return signCanonicalText(canonicalJson(value), key)
}

/**
 * The same, for a caller that already holds the JCS text (it stores the exact bytes it signs). Signs with
 * node:crypto directly: on the calling thread for a text of ordinary size, where Ed25519 takes tens of
 * microseconds, less than a round trip through libuv's thread pool (which jose's `CompactSign` makes through
 * WebCrypto); in the thread pool for a large text, whose two SHA-512 passes over megabytes would hold the event
 * loop. The token is byte for byte what `CompactSign` gives (Ed25519 is deterministic; the header is serialized
 * the same way), as the tests check.
 */
export async function signCanonicalText(jcs: string, key: SigningKey): Promise<string> {
  const header = Buffer.from(JSON.stringify({ alg: 'Ed25519', kid: key.kid })).toString('base64url')
  const payload = Buffer.from(jcs).toString('base64url')
  const signingInput = `${header}.${payload}`
  const data = Buffer.from(signingInput)
  const signature =
    data.length < THREAD_POOL_SIGNING_BYTES
      ? sign(null, data, keyObjectOf(key))
      : await new Promise<Buffer>((resolve, reject) =>
          sign(null, data, keyObjectOf(key), (err, signed) => (err ? reject(err) : resolve(signed))),
        )
  return `${signingInput}.${signature.toString('base64url')}`
}

/** Signing inputs at least this long are signed in libuv's thread pool rather than on the calling thread. */
export const THREAD_POOL_SIGNING_BYTES = 256 * 1024

const keyObjects = new WeakMap<SigningKey, KeyObject>()

function keyObjectOf(key: SigningKey): KeyObject {
  let keyObject = keyObjects.get(key)
  if (keyObject === undefined) {
    keyObject = key.privateKey instanceof KeyObject ? key.privateKey : KeyObject.from(key.privateKey)
    keyObjects.set(key, keyObject)
  }
  return keyObject
}

/**
 * Verifies a compact JWS against a JWKS and returns its payload as text. Used for manifest
 * envelopes and audit checkpoints (`{checkpoint, jws}`); callers compare the payload with
 * the JCS of the value it claims to sign. The checks themselves live in @arbiter/transparency,
 * shared with the TypeScript client, so the service and its clients refuse exactly the same tokens.
 */
export async function verifyCompactAgainstJwks(
  jws: string,
  jwks: Jwks,
): Promise<VerifyResult & { payload?: string }> {
  try {
    const { kid, payload } = await verifyCompactJws(jws, jwks)
    return { ok: true, kid, payload }
  } catch (err) {
    if (err instanceof JwsError) return { ok: false, reason: err.message }
    throw err
  }
}

/**
 * Checks a manifest envelope `{manifest, manifest_digest, jws, audit_seq?}`: the digest
 * is `sha256(JCS(manifest))`, the JWS verifies against the JWKS, and its payload is exactly
 * `JCS(manifest)`. Each failure says which check failed.
 */
export async function verifyEnvelope(envelope: unknown, jwks: Jwks): Promise<VerifyResult> {
  try {
    const { kid } = await verifyManifestEnvelope(envelope, jwks)
    return { ok: true, kid }
  } catch (err) {
    if (err instanceof JwsError) return { ok: false, reason: err.message }
    throw err
  }
}
