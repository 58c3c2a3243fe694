import type { SigningKey } from '../../crypto/signing-key.ts'
import { type Statement, statement } from '../statement.ts'

/**
 * signing_keys: the public half of every key that ever signed (kid, public_jwk, first_used_at), so the JWKS keeps
 * listing retired kids after a rotation and old manifests keep verifying.
 */

/** Records the key; returns its kid when this statement added it, no row when it was there already. */
export function signingKeyInsert(key: SigningKey): Statement<{ kid: string }> {
  return statement(
    `INSERT INTO signing_keys (kid, public_jwk) VALUES ($1, $2::jsonb) ON CONFLICT (kid) DO NOTHING RETURNING kid`,
    [key.kid, JSON.stringify(key.publicJwk)],
  )
}

/** Every key that ever signed, oldest first. */
export function signingKeysAll(): Statement<{ public_jwk: SigningKey['publicJwk'] }> {
  return statement('SELECT public_jwk FROM signing_keys ORDER BY first_used_at, kid')
}
