import pg from 'pg'
import type { Role } from '../../domain/vocabulary.ts'
import { typeParsers } from '../pool.ts'
import { runStatement, type Statement, statement } from '../statement.ts'

/** api_keys: id, role, orchestrator_ids (orchestrator keys only), label, key_hash (sha256 of the secret),
 * created_at, revoked_at (null while active). */
export interface ApiKeyRow {
  id: string
  role: Role
  orchestrator_ids: string[]
  label: string
  created_at: Date
  revoked_at: Date | null
}

const COLUMNS = 'id, role, orchestrator_ids, label, created_at, revoked_at'

export function apiKeyInsert(key: {
  id: string
  role: Role
  orchestratorIds: string[]
  label: string
  keyHash: string
  createdAt: Date
}): Statement<ApiKeyRow> {
  return statement(
    `INSERT INTO api_keys (id, role, orchestrator_ids, label, key_hash, created_at)
     VALUES ($1, $2, $3::text[], $4, $5, $6) RETURNING ${COLUMNS}`,
    [key.id, key.role, key.orchestratorIds, key.label, key.keyHash, key.createdAt],
  )
}

/** The active key with this hash (no row: unknown or revoked). */
export function activeApiKeyByHash(keyHash: string): Statement<ApiKeyRow> {
  return statement(`SELECT ${COLUMNS} FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`, [keyHash])
}

/** The key with this hash, active or revoked. */
export function apiKeyByHash(keyHash: string): Statement<ApiKeyRow> {
  return statement(`SELECT ${COLUMNS} FROM api_keys WHERE key_hash = $1`, [keyHash])
}

/** A page of keys in creation order, after `afterCreated` (from the start when null). */
export function apiKeysPage(
  afterCreated: { at: Date; id: string } | null,
  limit: number,
): Statement<ApiKeyRow> {
  return statement(
    `SELECT ${COLUMNS} FROM api_keys
     WHERE ($1::timestamptz IS NULL OR (created_at, id) > ($1::timestamptz, $2::uuid))
     ORDER BY created_at, id LIMIT $3`,
    [afterCreated?.at ?? null, afterCreated?.id ?? null, limit],
  )
}

/** Those of `ids` that name revoked keys. */
export function revokedApiKeyIds(ids: string[]): Statement<{ id: string }> {
  return statement('SELECT id FROM api_keys WHERE id = ANY($1::uuid[]) AND revoked_at IS NOT NULL', [ids])
}

/** The key, locked until the transaction ends (no row when unknown). */
export function apiKeyLock(id: string): Statement<ApiKeyRow> {
  return statement(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1 FOR UPDATE`, [id])
}

export function apiKeyRevoke(id: string, at: Date): Statement {
  return statement('UPDATE api_keys SET revoked_at = $2 WHERE id = $1', [id, at])
}

// Arbitrary constant naming "first admin key" in pg_advisory_xact_lock: replicas starting together create one.
const BOOTSTRAP_LOCK_KEY = 7_246_153_002

/** Serializes "create the first admin key" across replicas until the transaction ends. */
export function adminBootstrapLock(): Statement {
  return statement('SELECT pg_advisory_xact_lock($1::bigint)', [BOOTSTRAP_LOCK_KEY])
}

export function activeAdminKeyCount(): Statement<{ n: number }> {
  return statement(`SELECT count(*)::int AS n FROM api_keys WHERE role = 'admin' AND revoked_at IS NULL`)
}

/** The channel replicas hear key changes on (revocations, and the key caches' own heartbeats and acks). */
export const KEY_CHANNEL = 'arbiter_api_keys'
/** application_name of the connections listening on KEY_CHANNEL: a revoker counts them to await their acks. */
export const KEY_LISTENER_NAME = 'arbiter-key-cache'

/** Tells every listening replica, when the transaction commits, that a key changed. */
export function keyChangeNotify(payload: string): Statement {
  return statement('SELECT pg_notify($1, $2)', [KEY_CHANNEL, payload])
}

/** Key caches listening on this database right now (their LISTEN connections). */
export function keyListenerCount(): Statement<{ n: number }> {
  return statement(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
    [KEY_LISTENER_NAME],
  )
}

/** A dedicated connection listening on KEY_CHANNEL; `notify` sends on it (heartbeats, acks). */
export interface KeyListener {
  notify(payload: string): Promise<void>
  close(): Promise<void>
}

export async function listenForKeyChanges(
  connectionString: string,
  handlers: { onMessage: (payload: string) => void; onLost: (err: Error) => void },
): Promise<KeyListener> {
  const client = new pg.Client({
    connectionString,
    application_name: KEY_LISTENER_NAME,
    keepAlive: true,
    types: typeParsers,
  })
  let lost = false
  const lose = (err: Error) => {
    if (lost) return
    lost = true
    handlers.onLost(err)
  }
  client.on('error', lose)
  client.on('end', () => lose(new Error('key listener connection ended')))
  client.on('notification', (message) => {
    if (message.channel === KEY_CHANNEL) handlers.onMessage(message.payload ?? '')
  })
  try {
    await client.connect()
    await client.query(`LISTEN ${KEY_CHANNEL}`)
  } catch (err) {
    lost = true
    await client.end().catch(() => {})
    throw err
  }
  return {
    notify: async (payload) => {
      await runStatement(client, keyChangeNotify(payload))
    },
    close: async () => {
      lost = true
      await client.end().catch(() => {})
    },
  }
}
