import { createHash, createPublicKey, type KeyObject } from 'node:crypto'
import canonicalize from 'canonicalize'
import pg from 'pg'
import type { UnsequencedAuditRecord } from '../../src/audit-log/core/records.ts'
import type { TestApp } from './app.ts'

/**
 * What a client outside Arbiter computes from the published log format alone: leaf hashes from the records it
 * reads, and the log's note key from the JWKS. Only the RFC 9162 / signed-note package is shared with the service
 * (it is tested against the transparency-dev and Go vectors on its own).
 */

export interface ClientRecord {
  seq: number
  hash: string
  [field: string]: unknown
}

/** SHA-256(0x00 ‖ UTF-8 of JCS(record)). */
export function clientLeafHash(record: unknown): Buffer {
  return createHash('sha256')
    .update(Buffer.from([0]))
    .update(canonicalize(record)!, 'utf8')
    .digest()
}

/** Every record, read through the API (which waits for the sequencer). */
export async function allRecords(app: TestApp, key: string): Promise<ClientRecord[]> {
  const records: ClientRecord[] = []
  let cursor: string | null = null
  do {
    const page: { items: ClientRecord[]; next_cursor: string | null } = (
      await app.request(key, {
        method: 'GET',
        url: `/v1/audit/records?limit=500${cursor ? `&cursor=${cursor}` : ''}`,
      })
    ).json()
    records.push(...page.items)
    cursor = page.next_cursor
  } while (cursor)
  return records
}

/** The Ed25519 public keys the JWKS publishes. */
export async function jwksKeys(app: TestApp): Promise<KeyObject[]> {
  const jwks = (await app.request(null, { method: 'GET', url: '/.well-known/jwks.json' })).json()
  return jwks.keys.map((jwk: { kty: string; crv: string; x: string }) =>
    createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: 'jwk' }),
  )
}

/** The note key ID as the signed-note format defines it: SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)[:4]. */
export function clientKeyId(name: string, publicKey: KeyObject): Buffer {
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url')
  return createHash('sha256')
    .update(name, 'utf8')
    .update(Buffer.from([0x0a, 0x01]))
    .update(raw)
    .digest()
    .subarray(0, 4)
}

/**
 * Runs `fn` on a direct connection, as a database superuser would have one (how tests tamper behind the
 * service's back); closed before the database is dropped.
 */
export async function asSuperuser(app: TestApp, fn: (client: pg.Client) => Promise<void>) {
  const client = new pg.Client({ connectionString: app.db.connectionString })
  client.on('error', () => {})
  await client.connect()
  try {
    await fn(client)
  } finally {
    await client.end()
  }
}

/** An entry the system writes about itself (a key created): what log tests sequence, with the data they need. */
export function systemEntry(data: UnsequencedAuditRecord['data'], at: string): UnsequencedAuditRecord {
  return {
    at,
    kind: 'key.created',
    actor: 'system',
    outcome_id: null,
    manifest_id: null,
    subagent_id: null,
    orchestrator_id: null,
    verdict: null,
    data,
  }
}
