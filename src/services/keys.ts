import { createHash, randomBytes, randomUUID } from 'node:crypto'
import type { Pool, Queryable } from '../db/pool.ts'
import { withTransaction } from '../db/pool.ts'
import {
  type ApiKeyRow,
  countActiveAdminKeys,
  findActiveKeyByHash,
  insertApiKey,
  listApiKeys,
  type Role,
  revokeApiKey,
} from '../db/repositories/api-keys.ts'
import { AppError } from '../errors.ts'
import { appendAuditRecord } from './audit-log.ts'

export const ROLES = ['orchestrator', 'dashboard', 'ops', 'admin'] as const satisfies readonly Role[]

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
// Arbitrary constant naming "first admin key" in pg_advisory_xact_lock: replicas starting together create one.
const BOOTSTRAP_LOCK_KEY = 7_246_153_002

export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

export function generateApiKeySecret(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url')
}

export function toApiKeyView(row: ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    role: row.role,
    orchestrator_ids: row.orchestrator_ids,
    label: row.label,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at ? row.revoked_at.toISOString() : null,
  }
}

export async function authenticate(db: Queryable, secret: string): Promise<Principal | undefined> {
  const row = await findActiveKeyByHash(db, hashApiKey(secret))
  return row ? { keyId: row.id, role: row.role, orchestratorIds: row.orchestrator_ids } : undefined
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

async function insertKeyWithAudit(db: Queryable, input: CreateKeyInput, actor: string) {
  const orchestratorIds = checkKeyInput(input)
  const secret = input.secret ?? generateApiKeySecret()
  const row = await insertApiKey(db, {
    id: randomUUID(),
    role: input.role,
    orchestratorIds,
    label: input.label,
    keyHash: hashApiKey(secret),
    createdAt: new Date(),
  })
  await appendAuditRecord(db, {
    kind: 'key.created',
    actor,
    data: { key_id: row.id, role: row.role, orchestrator_ids: row.orchestrator_ids, label: row.label },
  })
  return { ...toApiKeyView(row), key: secret }
}

export async function createApiKey(pool: Pool, input: CreateKeyInput, actor: string) {
  return withTransaction(pool, (client) => insertKeyWithAudit(client, input, actor))
}

export async function listKeys(pool: Pool, after: { at: Date; id: string } | null, limit: number) {
  return (await listApiKeys(pool, after, limit)).map(toApiKeyView)
}

export async function revokeKey(pool: Pool, id: string, actor: string): Promise<void> {
  await withTransaction(pool, async (client) => {
    const { row, changed } = await revokeApiKey(client, id, new Date())
    if (!row) throw new AppError('NOT_FOUND', `no key ${id}`)
    if (changed) {
      await appendAuditRecord(client, { kind: 'key.revoked', actor, data: { key_id: id, role: row.role } })
    }
  })
}

/**
 * Makes sure an admin key exists. Returns the secret only when this call generated one (to be printed once);
 * a bootstrap key from the environment is used as given and never echoed.
 */
export async function ensureAdminKey(
  pool: Pool,
  bootstrapSecret: string | undefined,
): Promise<{ created: 'generated'; key: string } | { created: 'bootstrap' | 'none' }> {
  return withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [BOOTSTRAP_LOCK_KEY])
    if ((await countActiveAdminKeys(client)) > 0) return { created: 'none' as const }
    if (bootstrapSecret !== undefined) {
      // The same secret may already exist as a revoked key; reusing a revoked secret would revive it.
      if (await findRevokedOrActive(client, bootstrapSecret)) return { created: 'none' as const }
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

async function findRevokedOrActive(db: Queryable, secret: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM api_keys WHERE key_hash = $1', [hashApiKey(secret)])
  return rows.length > 0
}
