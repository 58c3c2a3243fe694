import type { SigningKey } from '../../crypto/signing-key.ts'
import type { Queryable } from '../pool.ts'

/**
 * signing_keys: the public half of every key that ever signed (kid, public_jwk, first_used_at), so the JWKS keeps
 * listing retired kids after a rotation and old manifests keep verifying. Resolves true when this call added the
 * kid, false when it was there already (a restart, or another replica won the race).
 */
export async function insertSigningKey(db: Queryable, key: SigningKey): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO signing_keys (kid, public_jwk) VALUES ($1, $2::jsonb) ON CONFLICT (kid) DO NOTHING`,
    [key.kid, JSON.stringify(key.publicJwk)],
  )
  return rowCount === 1
}

/** Every key that ever signed, oldest first. */
export async function listSigningKeys(db: Queryable): Promise<SigningKey['publicJwk'][]> {
  const { rows } = await db.query<{ public_jwk: SigningKey['publicJwk'] }>(
    'SELECT public_jwk FROM signing_keys ORDER BY first_used_at, kid',
  )
  return rows.map((row) => row.public_jwk)
}
