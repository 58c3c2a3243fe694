import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pg from 'pg'
import { fillAuditLog } from '../../bench/audit-fill.ts'
import { signCheckpoint } from '../../src/audit-log/checkpoints.ts'
import { CHUNK_LEVEL, CHUNK_SIZE } from '../../src/audit-log/core/verify-chunks.ts'
import { verifyLog } from '../../src/audit-log/verify-log.ts'
import { createPool } from '../../src/db/pool.ts'
import { buildTestApp } from '../helpers/app.ts'

const TOTAL = 2 * CHUNK_SIZE + 3_000

/**
 * Verifying on worker threads must report exactly what verifying record by record reports, for a good log and for
 * every kind of damage, wherever it falls relative to the chunks the workers take.
 */
describe('audit verify in chunks (worker threads, or connections of one thread)', () => {
  it('reports what the sequential check reports, for a good log and for damage in any chunk', async (t) => {
    const app = await buildTestApp(t)
    const ops = await app.key('ops')
    await app.app.services.auditLog.catchUp()
    await fillAuditLog(app.db.connectionString, TOTAL, { timeOriginMs: Date.UTC(2026, 0, 1) })
    const db = createPool({ connectionString: app.db.connectionString, max: 4 })
    t.after(() => db.end())
    // Checkpoints inside chunks and on a chunk boundary, besides the one the API signs at the end.
    const { signer } = app.app.services.auditLog
    for (const size of [100, CHUNK_SIZE, CHUNK_SIZE + 1_321, TOTAL - 1]) {
      const { rows } = await db.query('SELECT hash FROM audit_records WHERE seq = $1', [size])
      await signCheckpoint(db, signer, size, rows[0].hash)
    }
    assert.equal((await app.request(ops, { method: 'GET', url: '/v1/audit/checkpoint' })).statusCode, 200)

    // Chunks on worker threads, and in this thread over two connections of its own (the CLI on the embedded
    // database), must each report what the sequential check reports.
    const both = async () => {
      const { connectionString } = app.db
      const sequential = await verifyLog(db)
      const parallel = await verifyLog(db, { parallel: { connectionString, workers: 2 } })
      assert.deepEqual(parallel, sequential)
      const inThread = await verifyLog(db, { parallel: { connectionString, workers: 2, inThread: true } })
      assert.deepEqual(inThread, sequential)
      return parallel
    }
    const good = await both()
    assert.equal(good.ok, true)
    assert.equal(good.checked, TOTAL)
    assert.equal(good.tree_size, TOTAL)
    assert.ok(good.checkpoints_checked >= 5)

    const tamper = async (table: string, trigger: string, sql: string) => {
      const client = new pg.Client({ connectionString: app.db.connectionString })
      await client.connect()
      try {
        await client.query(`ALTER TABLE ${table} DISABLE TRIGGER ${trigger}`)
        await client.query(sql)
        await client.query(`ALTER TABLE ${table} ENABLE ALWAYS TRIGGER ${trigger}`)
      } finally {
        await client.end()
      }
    }
    // A node above the chunks' level, completed by the second chunk: the seq that completed it.
    await tamper(
      'merkle_nodes',
      'merkle_nodes_no_update_delete',
      `UPDATE merkle_nodes SET hash = sha256(hash) WHERE level = ${CHUNK_LEVEL + 1} AND idx = 0`,
    )
    const node = await both()
    assert.equal(node.first_bad_seq, 2 * CHUNK_SIZE)
    assert.equal(node.head_seq, 2 * CHUNK_SIZE - 1)

    // A checkpoint inside the second chunk, before that node.
    await tamper(
      'audit_checkpoints',
      'audit_checkpoints_no_update_delete',
      `UPDATE audit_checkpoints SET jws = jws || 'x' WHERE tree_size = ${CHUNK_SIZE + 1_321}`,
    )
    assert.equal((await both()).first_bad_seq, CHUNK_SIZE + 1_321)

    // Nodes missing inside the second chunk, before that checkpoint: an inner one (level 3, covering the chunk's
    // leaves 48..55, completed by its 56th record) and, earlier, a leaf (the chunk's 31st record's).
    await tamper(
      'merkle_nodes',
      'merkle_nodes_no_update_delete',
      `DELETE FROM merkle_nodes WHERE level = 3 AND idx = ${(CHUNK_SIZE + 48) / 8}`,
    )
    assert.equal((await both()).first_bad_seq, CHUNK_SIZE + 56)
    await tamper(
      'merkle_nodes',
      'merkle_nodes_no_update_delete',
      `DELETE FROM merkle_nodes WHERE level = 0 AND idx = ${CHUNK_SIZE + 30}`,
    )
    assert.equal((await both()).first_bad_seq, CHUNK_SIZE + 31)

    // A record in the second chunk, before all of these.
    await tamper(
      'audit_records',
      'audit_records_no_update_delete',
      // The stored text, its values unchanged (the database holds the columns equal to its values).
      `UPDATE audit_records SET canonical = replace(canonical, '"actor":', '"actor": ') WHERE seq = ${CHUNK_SIZE + 17}`,
    )
    const record = await both()
    assert.equal(record.first_bad_seq, CHUNK_SIZE + 17)
    assert.equal(record.checked, CHUNK_SIZE + 16)

    // And a record in the first chunk.
    await tamper(
      'audit_records',
      'audit_records_no_update_delete',
      // A column, with the stored text dropped: the record's text is rebuilt from its columns.
      `UPDATE audit_records SET actor = 'mallory', canonical = NULL WHERE seq = 9`,
    )
    assert.equal((await both()).first_bad_seq, 9)
  })
})
