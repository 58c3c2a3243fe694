import { buildJwks } from '../crypto/jwks.ts'
import { listSigningKeys } from '../db/repositories/signing-keys.ts'
import type { ServiceContext } from './context.ts'

/** GET /.well-known/jwks.json: the public key of every key that ever signed, so old manifests keep verifying. */
export async function publishedJwks(ctx: Pick<ServiceContext, 'db'>) {
  return buildJwks(await listSigningKeys(ctx.db))
}
