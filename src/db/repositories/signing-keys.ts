import type { SigningKey } from '../../crypto/signing-key.ts'
import type { Queryable } from '../pool.ts'

/**
 * signing_keys: the public half of every key that ever signed (kid, public_jwk, first_used_at), so the JWKS keeps
 * listing retired kids after a rotation and old manifests keep verifying.
 */
export async function registerSigningKey(db: Queryable, key: SigningKey): Promise<void> {
  await db.query(
    `INSERT INTO signing_keys (kid, public_jwk) VALUES ($1, $2::jsonb) ON CONFLICT (kid) DO NOTHING`,
    [key.kid, JSON.stringify(key.publicJwk)],
  )
}

/** Every key that ever signed, oldest first. */
export async function listSigningKeys(db: Queryable): Promise<SigningKey['publicJwk'][]> {
  const { rows } = await db.query<{ public_jwk: SigningKey['publicJwk'] }>(
    'SELECT public_jwk FROM signing_keys ORDER BY first_used_at, kid',
  )
  return rows.map((row) => row.public_jwk)
}
