import { appendAuditRecords } from '../audit-log/append.ts'
import { buildJwks } from '../crypto/jwks.ts'
import type { SigningKey } from '../crypto/signing-key.ts'
import { type Pool, withTransaction } from '../db/pool.ts'
import { signingKeyInsert, signingKeysAll } from '../db/repositories/signing-keys.ts'
import { queryFirst, queryRows } from '../db/statement.ts'
import type { ServiceContext } from './context.ts'

/**
 * Records the public half of the key this process signs with (so the JWKS lists it), at start and on rotation.
 * The first time a kid is recorded — a key first used to sign — the same transaction writes `signing_key.added`;
 * a restart with the same key, or another replica starting with it at the same moment, writes nothing more.
 */
export async function registerSigningKey(db: Pool, key: SigningKey): Promise<void> {
  await withTransaction(db, async (tx) => {
    if (!(await queryFirst(tx, signingKeyInsert(key)))) return
    await appendAuditRecords(tx, [
      {
        kind: 'signing_key.added',
        actor: 'system',
        data: { kid: key.kid, alg: key.publicJwk.alg },
      },
    ])
  })
}

/** GET /.well-known/jwks.json: the public key of every key that ever signed, so old manifests keep verifying. */
export async function publishedJwks(ctx: Pick<ServiceContext, 'db'>) {
  return buildJwks((await queryRows(ctx.db, signingKeysAll())).map((row) => row.public_jwk))
}
