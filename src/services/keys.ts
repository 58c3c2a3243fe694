import { hash, randomBytes, randomUUID } from 'node:crypto'
import { appendAuditRecords } from '../audit-log/append.ts'
import type { Queryable } from '../db/pool.ts'
import { withTransaction } from '../db/pool.ts'
import {
  type ApiKeyRow,
  activeAdminKeyCount,
  activeApiKeyByHash,
  adminBootstrapLock,
  apiKeyByHash,
  apiKeyInsert,
  apiKeyLock,
  apiKeyRevoke,
  apiKeysPage,
  keyChangeNotify,
  keyListenerCount,
} from '../db/repositories/api-keys.ts'
import { queryFirst, queryOne, queryRows, runStatement } from '../db/statement.ts'
import type { Role } from '../domain/vocabulary.ts'
import { AppError, found } from '../errors.ts'
import { type Page, type PageRequest, readCreatedPage } from '../pagination.ts'
import type { Actor, ServiceContext } from './context.ts'
import { FRESH_MS, keyRevokedInProcess } from './key-cache.ts'

/** Who is calling: resolved from the bearer key on every request (so a revocation bites on the next one). */
export interface Principal {
  keyId: string
  role: Role
  orchestratorIds: string[]
}

export interface ApiKeyView {
  id: string
  role: Role
  orchestrator_ids: string[]
  label: string
  created_at: string
  revoked_at: string | null
}

const KEY_PREFIX = 'arb_'

export function hashApiKey(secret: string): string {
  // One-shot hashing: every authenticated request does this, and it skips building a Hash object.
  return hash('sha256', secret, 'hex')
}

export function generateApiKeySecret(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url')
}

function toApiKeyView(row: ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    role: row.role,
    orchestrator_ids: row.orchestrator_ids,
    label: row.label,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at ? row.revoked_at.toISOString() : null,
  }
}

/**
 * The active key behind a secret: from the key cache when it may serve (see KeyCache: a revocation still bites on
 * the next request on every replica), otherwise read from the database and remembered.
 */
export async function authenticate(
  ctx: Pick<ServiceContext, 'db' | 'keyCache'>,
  secret: string,
): Promise<Principal | undefined> {
  const keyHash = hashApiKey(secret)
  const cache = ctx.keyCache
  const cached = cache?.lookup(keyHash)
  if (cached) return cached
  const generation = cache?.generation ?? 0
  const row = await queryFirst(ctx.db, activeApiKeyByHash(keyHash))
  if (!row) return undefined
  const principal = { keyId: row.id, role: row.role, orchestratorIds: row.orchestrator_ids }
  cache?.remember(keyHash, principal, generation)
  return principal
}

/**
 * The active key behind a secret if the key cache knows it and may serve, without reading the database (undefined
 * otherwise, also for a valid key the cache has not seen): what an address that keeps guessing keys is allowed.
 */
export function authenticateFromCache(
  ctx: Pick<ServiceContext, 'keyCache'>,
  secret: string,
): Principal | undefined {
  return ctx.keyCache?.lookup(hashApiKey(secret))
}

export interface CreateKeyInput {
  role: Role
  orchestrator_ids?: string[] | undefined
  label: string
  /** A caller-chosen secret (bootstrap only); otherwise one is generated. */
  secret?: string
}

function checkKeyInput(input: CreateKeyInput): string[] {
  const ids = [...new Set(input.orchestrator_ids ?? [])].sort()
  if (input.role === 'orchestrator' && ids.length === 0) {
    throw new AppError(
      'VALIDATION',
      'an orchestrator key must be bound to at least one orchestrator id',
      {},
      [{ path: 'body/orchestrator_ids', message: 'required for role orchestrator' }],
    )
  }
  if (input.role !== 'orchestrator' && ids.length > 0) {
    throw new AppError('VALIDATION', 'only orchestrator keys are bound to orchestrator ids', {}, [
      { path: 'body/orchestrator_ids', message: `not allowed for role ${input.role}` },
    ])
  }
  return ids
}

async function insertKeyWithAudit(db: Queryable, input: CreateKeyInput, actor: Actor) {
  const orchestratorIds = checkKeyInput(input)
  const secret = input.secret ?? generateApiKeySecret()
  const row = await queryOne(
    db,
    apiKeyInsert({
      id: randomUUID(),
      role: input.role,
      orchestratorIds,
      label: input.label,
      keyHash: hashApiKey(secret),
      createdAt: new Date(),
    }),
  )
  await appendAuditRecords(db, [
    {
      kind: 'key.created',
      actor,
      data: { key_id: row.id, role: row.role, orchestrator_ids: row.orchestrator_ids, label: row.label },
    },
  ])
  return { ...toApiKeyView(row), key: secret }
}

/** Creates a key; the secret is in the answer and nowhere else (only its hash is stored). */
export async function createApiKey(ctx: Pick<ServiceContext, 'db'>, input: CreateKeyInput, actor: Actor) {
  const { revoked_at: _never, ...created } = await withTransaction(ctx.db, (client) =>
    insertKeyWithAudit(client, input, actor),
  )
  return created
}

export async function pageKeys(
  ctx: Pick<ServiceContext, 'db'>,
  page: PageRequest,
): Promise<Page<ApiKeyView>> {
  return readCreatedPage(page, (after, limit) => queryRows(ctx.db, apiKeysPage(after, limit)), toApiKeyView)
}

/**
 * Revokes a key. The revocation is NOTIFYed to every replica's key cache in the same transaction, and this returns
 * only once each listening cache has acked it (or no cache that missed it can still serve): the next request on
 * any replica reads the key again and is refused.
 */
export async function revokeKey(
  ctx: Pick<ServiceContext, 'db' | 'keyCache'>,
  id: string,
  actor: Actor,
): Promise<void> {
  const nonce = randomUUID()
  ctx.keyCache?.expectAcks(nonce)
  let changed = false
  let committed = false
  try {
    await withTransaction(ctx.db, async (tx) => {
      const row = found(await queryFirst(tx, apiKeyLock(id)), `no key ${id}`)
      changed = row.revoked_at === null
      if (changed) {
        await runStatement(tx, apiKeyRevoke(id, new Date()))
        await runStatement(tx, keyChangeNotify(`revoke:${nonce}:${id}`))
        await appendAuditRecords(tx, [{ kind: 'key.revoked', actor, data: { key_id: id, role: row.role } }])
      }
    })
    committed = true
  } finally {
    ctx.keyCache?.invalidate()
    keyRevokedInProcess(committed && changed ? id : null)
    // This replica's own streams of the key close now; the other replicas' when they hear the NOTIFY.
    if (committed && changed) ctx.keyCache?.revoked(id)
    // A revocation that failed (unknown key, database error) awaits no acks: forget its waiter.
    if (!committed) await ctx.keyCache?.awaitAcks(nonce, 0)
  }
  if (!changed) {
    await ctx.keyCache?.awaitAcks(nonce, 0)
    return
  }
  const listeners = (await queryOne(ctx.db, keyListenerCount())).n
  if (ctx.keyCache) await ctx.keyCache.awaitAcks(nonce, listeners)
  // A revoker with no cache of its own (the CLI) hears no acks: it waits until no cache that missed it serves.
  else if (listeners > 0) await new Promise((resolve) => setTimeout(resolve, FRESH_MS))
}

/**
 * Makes sure an admin key exists. Returns the secret only when this call generated one (to be printed once);
 * a bootstrap key from the environment is used as given and never echoed.
 */
export async function ensureAdminKey(
  ctx: Pick<ServiceContext, 'db'>,
  bootstrapSecret: string | undefined,
): Promise<{ created: 'generated'; key: string } | { created: 'bootstrap' | 'none' }> {
  return withTransaction(ctx.db, async (client) => {
    await runStatement(client, adminBootstrapLock())
    if ((await queryOne(client, activeAdminKeyCount())).n > 0) return { created: 'none' as const }
    if (bootstrapSecret !== undefined) {
      // The same secret may already exist as a revoked key; reusing a revoked secret would revive it.
      if (await queryFirst(client, apiKeyByHash(hashApiKey(bootstrapSecret))))
        return { created: 'none' as const }
      await insertKeyWithAudit(
        client,
        { role: 'admin', label: 'bootstrap', secret: bootstrapSecret },
        'system',
      )
      return { created: 'bootstrap' as const }
    }
    const created = await insertKeyWithAudit(client, { role: 'admin', label: 'first admin key' }, 'system')
    return { created: 'generated' as const, key: created.key }
  })
}

/** Orchestrator keys speak only under their own orchestrator ids; admin keys under any. */
export function assertMaySpeakFor(principal: Principal, orchestratorId: string): void {
  if (principal.role === 'admin') return
  if (principal.role === 'orchestrator' && principal.orchestratorIds.includes(orchestratorId)) return
  throw new AppError('FORBIDDEN', `this key may not speak for orchestrator ${orchestratorId}`)
}
