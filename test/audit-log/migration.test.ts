import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it, type TestContext } from 'node:test'
import canonicalize from 'canonicalize'
import { compactVerify, createLocalJWKSet } from 'jose'
import {
  type AuditRecord,
  GENESIS_HASH,
  hashAuditRecord,
  type UnhashedAuditRecord,
} from '../../src/audit-log/core/records.ts'
import { sequenceEntries } from '../../src/audit-log/core/sequence-batch.ts'
import {
  decodeBase64,
  EMPTY_COMPACT_RANGE,
  rootFromLeafHashes,
  verifyInclusion,
} from '../../src/audit-log/core/transparency.ts'
import { batchWriteOutcome, sequencedBatchWrite } from '../../src/audit-log/store/batches.ts'
import { canonicalTextGuard } from '../../src/audit-log/verify-log.ts'
import { signCanonical } from '../../src/crypto/jws.ts'
import { migrate, readMigrations } from '../../src/db/migrate.ts'
import { createPool } from '../../src/db/pool.ts'
import { queryOne } from '../../src/db/statement.ts'
import { sha256 } from '../../src/domain/shared/canonical-json.ts'
import { buildTestApp, newSigningKey } from '../helpers/app.ts'
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts'
import { allRecords, clientLeafHash, systemEntry } from '../helpers/log-client.ts'

const OLD_RECORDS = 23
const OLD_MANIFEST_SEQ = 9

/**
 * A database as the code before the verifiable log left it: only the first migration, records chained and
 * inserted in each change's transaction under the head lock, and a manifest that names its own audit_seq inside
 * the signed bytes.
 */
async function oldDatabase(signingKey: Awaited<ReturnType<typeof newSigningKey>>) {
  const db = await createTestDatabase({ migrate: false })
  const pool = createPool({ connectionString: db.connectionString, max: 1 })
  try {
    await migrate(pool, (await readMigrations()).slice(0, 1))
    await pool.query(`INSERT INTO signing_keys (kid, public_jwk) VALUES ($1, $2::jsonb)`, [
      signingKey.kid,
      JSON.stringify(signingKey.publicJwk),
    ])
    const outcomeId = randomUUID()
    await pool.query(
      `INSERT INTO outcomes (id, subagent_id, run_id, request_digest, expected_orchestrators, fallback_policy,
                             status, evidence_hash, manifest_id, created_at)
       VALUES ($1, 'refund-agent', 'run-old', $2, '{orch-a}', 'escalate', 'decided', $2, $3, now())`,
      [outcomeId, sha256('old'), null],
    )
    const manifestId = randomUUID()
    const manifest = {
      manifest_id: manifestId,
      outcome_id: outcomeId,
      subagent_id: 'refund-agent',
      run_id: 'run-old',
      issued_at: '2025-06-01T12:00:00.000Z',
      verdict: 'AGREED',
      directive: 'PROCEED',
      resolved_outcome: 'success',
      subagent_outcome_evidence_hash: sha256('old'),
      interpretations: [],
      interpretation_divergence_receipt: null,
      ground_truth_arbiter_predicate: null,
      action_owner: 'orch-a',
      missing_orchestrators: [],
      supersedes: null,
      audit_seq: OLD_MANIFEST_SEQ,
      resolution: null,
    }
    const manifestJcs = canonicalize(manifest)!
    const jws = await signCanonical(manifest, signingKey)
    await pool.query(
      `INSERT INTO manifests (id, outcome_id, subagent_id, verdict, directive, final, inputs_digest, issued_at,
                              audit_seq, manifest_jcs, manifest_digest, jws)
       VALUES ($1, $2, 'refund-agent', 'AGREED', 'PROCEED', true, $3, $4, $5, $6, $7, $8)`,
      [
        manifestId,
        outcomeId,
        sha256('inputs'),
        manifest.issued_at,
        OLD_MANIFEST_SEQ,
        manifestJcs,
        sha256(manifestJcs),
        jws,
      ],
    )
    await pool.query('UPDATE outcomes SET manifest_id = $1 WHERE id = $2', [manifestId, outcomeId])
    const records: AuditRecord[] = []
    let prev: string = GENESIS_HASH
    for (let seq = 1; seq <= OLD_RECORDS; seq++) {
      const issued = seq === OLD_MANIFEST_SEQ
      const unhashed: UnhashedAuditRecord = {
        seq,
        at: new Date(Date.UTC(2025, 5, 1, 11, 0, seq)).toISOString(),
        kind: issued ? 'manifest.issued' : 'interpretation.recorded',
        actor: 'system',
        outcome_id: outcomeId,
        manifest_id: issued ? manifestId : null,
        subagent_id: 'refund-agent',
        orchestrator_id: issued ? null : 'orch-a',
        verdict: issued ? 'AGREED' : null,
        data: issued
          ? { manifest_digest: sha256(manifestJcs), directive: 'PROCEED' }
          : { revision: seq, note: 'written by the old code', nested: { list: [seq, 'ü'] } },
        prev_hash: prev,
      }
      const record = { ...unhashed, hash: hashAuditRecord(unhashed) }
      records.push(record)
      prev = record.hash
      await pool.query(
        `INSERT INTO audit_records (seq, at, kind, actor, outcome_id, manifest_id, subagent_id, orchestrator_id,
                                    verdict, data, prev_hash, hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12)`,
        [
          record.seq,
          record.at,
          record.kind,
          record.actor,
          record.outcome_id,
          record.manifest_id,
          record.subagent_id,
          record.orchestrator_id,
          record.verdict,
          JSON.stringify(record.data),
          record.prev_hash,
          record.hash,
        ],
      )
      await pool.query('UPDATE audit_head SET seq = $1, hash = $2', [record.seq, record.hash])
    }
    return { db, records, manifestId, manifestJcs, jws }
  } finally {
    await pool.end()
  }
}

describe('migrating a log written before the tree existed', () => {
  it('keeps every record, seq and hash, makes them the first leaves, and old manifests verify as stored', async (t) => {
    const signingKey = await newSigningKey()
    const old = await oldDatabase(signingKey)
    t.after(() => old.db.stop())
    // What the runtime does at start: apply every later migration (the case engine's, the log's, …).
    const upgrade = createPool({ connectionString: old.db.connectionString, max: 1 })
    try {
      await migrate(upgrade, await readMigrations())
    } finally {
      await upgrade.end()
    }
    // A small backfill batch, so the tree is built over the old records in several transactions.
    const app = await buildTestApp(t, {
      database: old.db,
      signingKey,
      config: { sequencer: { backfillSize: 5 } },
    })
    const ops = await app.key('ops')

    // 1. The old records are untouched and the chain continues after them.
    const records = await allRecords(app, ops)
    assert.deepEqual(
      records.slice(0, OLD_RECORDS).map(({ seq, hash, prev_hash }) => ({ seq, hash, prev_hash })),
      old.records.map(({ seq, hash, prev_hash }) => ({ seq, hash, prev_hash })),
    )
    assert.equal(
      records[OLD_RECORDS]!.prev_hash,
      old.records.at(-1)!.hash,
      'new records extend the old chain',
    )
    assert.ok(records.length > OLD_RECORDS, 'the keys the test created were logged after the old records')

    // 2. verify is ok over the whole log; the tree is the records' tree, old ones first.
    const report = (await app.request(ops, { method: 'GET', url: '/v1/audit/verify' })).json()
    assert.equal(report.ok, true, JSON.stringify(report))
    assert.equal(report.checked, records.length)
    const signed = (await app.request(ops, { method: 'GET', url: '/v1/audit/checkpoint' })).json()
    const root = rootFromLeafHashes(records.slice(0, signed.checkpoint.tree_size).map(clientLeafHash))
    assert.deepEqual(decodeBase64(signed.checkpoint.root_hash), root)
    assert.equal(report.root_hash, signed.checkpoint.root_hash)

    // 3. Old records have inclusion proofs like any other.
    for (const seq of [1, OLD_MANIFEST_SEQ, OLD_RECORDS]) {
      const proof = (
        await app.request(ops, { method: 'GET', url: `/v1/audit/proofs/inclusion?seq=${seq}` })
      ).json()
      assert.ok(
        verifyInclusion(
          seq - 1,
          proof.tree_size,
          clientLeafHash(records[seq - 1]),
          proof.proof.map((p: string) => decodeBase64(p)!),
          decodeBase64(proof.checkpoint.checkpoint.root_hash)!,
        ),
      )
    }

    // 4. The old manifest is served exactly as signed (audit_seq inside) and carries the same seq outside.
    const one = await app.request(ops, { method: 'GET', url: `/v1/manifests/${old.manifestId}` })
    assert.equal(one.statusCode, 200)
    assert.ok(
      one.body.startsWith(`{"manifest":${old.manifestJcs},`),
      'the stored canonical text, byte for byte',
    )
    const envelope = one.json()
    assert.equal(envelope.jws, old.jws)
    assert.equal(envelope.audit_seq, OLD_MANIFEST_SEQ)
    assert.equal(envelope.manifest.audit_seq, OLD_MANIFEST_SEQ)
    const jwks = createLocalJWKSet(
      (await app.request(null, { method: 'GET', url: '/.well-known/jwks.json' })).json(),
    )
    const { payload } = await compactVerify(envelope.jws, jwks)
    assert.equal(new TextDecoder().decode(payload), old.manifestJcs)
    const listed = (await app.request(ops, { method: 'GET', url: '/v1/manifests' })).json().items
    assert.equal(canonicalize(listed[0].manifest), old.manifestJcs, 'listed with its signed fields intact')
    const inclusion = (
      await app.request(ops, { method: 'GET', url: `/v1/manifests/${old.manifestId}/inclusion` })
    ).json()
    assert.equal(inclusion.record.seq, OLD_MANIFEST_SEQ)
    assert.equal(inclusion.record.hash, old.records[OLD_MANIFEST_SEQ - 1]!.hash)
  })
})

describe('migrating stored canonical texts to a constraint over every column', () => {
  /** A database as the code with migration 007 left it: three sequenced records, each with its stored text. */
  async function textsDatabase() {
    const db = await createTestDatabase({ migrate: false })
    const pool = createPool({ connectionString: db.connectionString, max: 1 })
    const all = await readMigrations()
    await migrate(pool, all.slice(0, 7))
    const batch = sequenceEntries({ seq: 0, hash: GENESIS_HASH, treeSize: 0 }, EMPTY_COMPACT_RANGE, [
      entry('a'),
      entry('b'),
      entry('c'),
    ])
    const outcome = batchWriteOutcome(
      await queryOne(
        pool,
        sequencedBatchWrite(
          { records: batch.records, nodes: batch.nodes, drainedIntakeIds: [], head: batch.head },
          { from: { seq: 0, hash: GENESIS_HASH, treeSize: 0 }, holder: null, ttlMs: 0 },
        ),
      ),
    )
    assert.equal(outcome, 'written')
    return {
      db,
      /** Runs SQL as a superuser with the append-only trigger off, as someone editing history would. */
      edit: async (sql: string) => {
        await pool.query('ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_delete')
        await pool.query(sql)
        await pool.query('ALTER TABLE audit_records ENABLE ALWAYS TRIGGER audit_records_no_update_delete')
      },
      upgrade: async () => {
        await migrate(pool, all)
        const { rows } = await pool.query<{ convalidated: boolean }>(
          `SELECT convalidated FROM pg_constraint WHERE conname = 'audit_records_canonical_record'`,
        )
        const guarded = (await canonicalTextGuard(pool)) !== null
        await pool.end()
        return { validated: rows[0]?.convalidated, guarded }
      },
    }
  }
  const entry = (marker: string) =>
    systemEntry(
      { marker, é: '\u2028', big: 1e21, list: [1.5, null, { kind: ',"kind":' }] },
      '2026-11-30T12:00:00.123Z',
    )

  async function verifyAfter(t: TestContext, db: TestDatabase) {
    const app = await buildTestApp(t, { database: db })
    const ops = await app.key('ops')
    return (await app.request(ops, { method: 'GET', url: '/v1/audit/verify' })).json()
  }

  it('validates the constraint over records whose columns agree with their texts, and verify uses them', async (t) => {
    const old = await textsDatabase()
    t.after(() => old.db.stop())
    assert.deepEqual(await old.upgrade(), { validated: true, guarded: true })
    const report = await verifyAfter(t, old.db)
    assert.equal(report.ok, true, JSON.stringify(report))
  })

  for (const [tampering, sql] of [
    ['a column that disagrees with its text', `UPDATE audit_records SET actor = 'mallory' WHERE seq = 2`],
    [
      'a text that is not JSON, its constraint dropped',
      `ALTER TABLE audit_records DROP CONSTRAINT audit_records_canonical_data;
       UPDATE audit_records SET canonical = 'not json' WHERE seq = 2`,
    ],
  ] as const) {
    it(`still starts over ${tampering}, and verify reports that record`, async (t) => {
      const old = await textsDatabase()
      t.after(() => old.db.stop())
      await old.edit(sql)
      assert.deepEqual(await old.upgrade(), { validated: false, guarded: false })
      const report = await verifyAfter(t, old.db)
      assert.equal(report.ok, false)
      assert.equal(report.first_bad_seq, 2)
    })
  }
})
