import {
  type JsonWebKeySet,
  JwsError,
  type VerifiedEnvelope,
  verifyManifestEnvelope,
} from '@arbiter/transparency'
import { ArbiterVerificationError } from './errors.ts'

export type { JsonWebKeySet, VerifiedEnvelope }

/** What verification proved, with the manifest typed as the envelope passed in types it (the API's envelopes do). */
export type Verified<T> = Omit<VerifiedEnvelope, 'manifest'> & {
  manifest: T extends { manifest: infer M extends object } ? M : Record<string, unknown>
}

/**
 * Verifies a manifest envelope against a JWKS (`GET /.well-known/jwks.json`) and returns what it proved; throws
 * ArbiterVerificationError naming the failed check otherwise:
 * - the JWS `alg` is `Ed25519` or `EdDSA` — nothing else, so neither `none` nor HS256 keyed with the public key;
 * - its `kid` names an Ed25519 key of the JWKS, and the signature verifies with it;
 * - the signed payload is byte for byte `JCS(manifest)` (RFC 8785), and `manifest_digest = sha256(JCS(manifest))`;
 * - `audit_seq`, inside the signed manifest (older manifests) or beside it, is a positive integer or null, and
 *   the two agree when both are present.
 * The checks are the service's own (`arbiter verify` runs the same code, from @arbiter/transparency).
 */
export async function verifyEnvelope<T>(envelope: T, jwks: JsonWebKeySet): Promise<Verified<T>> {
  try {
    return (await verifyManifestEnvelope(envelope, jwks)) as Verified<T>
  } catch (err) {
    if (err instanceof JwsError) throw new ArbiterVerificationError(err.check, err.message, { cause: err })
    throw err
  }
}
