import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it, type TestContext } from 'node:test'
import { appendAuditRecords } from '../../../src/audit-log/append.ts'
import { type LogHead, sequenceEntries } from '../../../src/audit-log/core/sequence-batch.ts'
import { compactRangeFromNodes, rootNodes } from '../../../src/audit-log/core/transparency.ts'
import {
  type BatchFence,
  type BatchWriteOutcome,
  batchWriteOutcome,
  openedBatch,
  type SequencedWrite,
  sequencedBatchWrite,
  sequencerBatchRead,
} from '../../../src/audit-log/store/batches.ts'
import { readNodes } from '../../../src/audit-log/store/merkle-nodes.ts'
import { createPool, type Queryable } from '../../../src/db/pool.ts'
import { execute, queryOne } from '../../../src/db/statement.ts'
import { createTestDatabase } from '../../helpers/database.ts'

const LEASE_MS = 60_000

const readSequencerBatch = async (db: Queryable, holder: string, ttlMs: number, limit: number) =>
  openedBatch(await execute(db, sequencerBatchRead(holder, ttlMs, limit)))
const writeSequencedBatch = async (db: Queryable, batch: SequencedWrite, fence: BatchFence) =>
  batchWriteOutcome(await queryOne(db, sequencedBatchWrite(batch, fence)))

/**
 * A migrated database with no sequencer running, three entries waiting in the intake, and a batch of them read
 * and computed by `holder` (which the read gave the lease to), ready to be written.
 */
async function readBatch(t: TestContext) {
  const db = await createTestDatabase()
  const pool = createPool({ connectionString: db.connectionString, max: 3 })
  t.after(async () => {
    await pool.end()
    await db.stop()
  })
  await appendAuditRecords(
    pool,
    ['a', 'b', 'c'].map((marker) => ({ kind: 'key.created' as const, actor: 'system', data: { marker } })),
  )
  const holder = randomUUID()
  const opened = await readSequencerBatch(pool, holder, LEASE_MS, 10)
  assert.ok(opened.head, 'the read took the free lease')
  assert.equal(opened.entries.length, 3)
  const from: LogHead = { seq: opened.head.seq, hash: opened.head.hash, treeSize: opened.head.tree_size }
  const range = compactRangeFromNodes(from.treeSize, await readNodes(pool, rootNodes(from.treeSize)))
  const sequenced = sequenceEntries(from, range, opened.entries)
  const batch: SequencedWrite = {
    records: sequenced.records,
    nodes: sequenced.nodes,
    drainedIntakeIds: opened.entries.map((entry) => entry.id),
    head: sequenced.head,
  }
  /** The head, the lease holder, and how many records and intake entries there are. */
  const state = async () => {
    const { rows } = await pool.query<{
      seq: number
      tree_size: number
      holder: string
      records: number
      intake: number
    }>(
      `SELECT h.seq, h.tree_size, l.holder::text AS holder,
              (SELECT count(*)::int FROM audit_records) AS records, (SELECT count(*)::int FROM audit_intake) AS intake
       FROM audit_head h, sequencer_lease l`,
    )
    return rows[0]!
  }
  return { pool, holder, from, batch, state, kind: db.kind, url: db.connectionString }
}

describe("a sequencer batch's write", () => {
  it('writes nothing for a holder that does not have the lease while another holds it', async (t) => {
    const { pool, holder, from, batch, state } = await readBatch(t)
    const before = await state()
    const outcome = await writeSequencedBatch(pool, batch, { from, holder: randomUUID(), ttlMs: LEASE_MS })
    assert.equal(outcome, 'lease lost')
    assert.deepEqual(await state(), before, 'nothing changed, and the lease is still its holder’s')
    assert.equal(before.holder, holder)
  })

  it('writes nothing when the head is no longer the one the batch was computed from', async (t) => {
    const { pool, holder, from, batch, state } = await readBatch(t)
    const before = await state()
    for (const moved of [
      { ...from, seq: from.seq + 1 },
      { ...from, hash: '0'.repeat(64) },
      { ...from, treeSize: from.treeSize + 1 },
    ]) {
      const outcome = await writeSequencedBatch(pool, batch, { from: moved, holder, ttlMs: LEASE_MS })
      assert.equal(outcome, 'head moved')
      assert.deepEqual(await state(), before)
    }
  })

  it('removes intake entries only for a lease holder', async (t) => {
    const { pool, from, batch, state } = await readBatch(t)
    const before = await state()
    await assert.rejects(
      writeSequencedBatch(pool, batch, { from, holder: null, ttlMs: LEASE_MS }),
      /audit_intake is drained only by the sequencer/,
    )
    assert.deepEqual(await state(), before)
  })

  it('writes the batch, renewing the lease, once; written again it is refused', async (t) => {
    const { pool, holder, from, batch, state } = await readBatch(t)
    const before = await state()
    // Compared by the database, to the microsecond.
    const expiry = await pool.query<{ at: string }>('SELECT expires_at::text AS at FROM sequencer_lease')
    assert.equal(await writeSequencedBatch(pool, batch, { from, holder, ttlMs: LEASE_MS }), 'written')
    const after = await state()
    assert.deepEqual(after, {
      seq: before.seq + 3,
      tree_size: before.tree_size + 3,
      holder,
      records: before.records + 3,
      intake: 0,
    })
    const renewed = await pool.query<{ later: boolean }>(
      'SELECT expires_at > $1::timestamptz AS later FROM sequencer_lease',
      [expiry.rows[0]!.at],
    )
    assert.equal(renewed.rows[0]!.later, true, 'the lease was renewed')
    assert.equal(await writeSequencedBatch(pool, batch, { from, holder, ttlMs: LEASE_MS }), 'head moved')
    assert.deepEqual(await state(), after)
  })

  it('of two writes of one batch racing from the same head, exactly one writes', async (t) => {
    const { pool, holder, from, batch, state, kind, url } = await readBatch(t)
    const before = await state()
    // A third connection holds the lease row until both writes have been sent: both wait on it, then race.
    const blocker = await pool.connect()
    await blocker.query('BEGIN')
    await blocker.query('SELECT 1 FROM sequencer_lease FOR UPDATE')
    const racing = [1, 2].map(() => writeSequencedBatch(pool, batch, { from, holder, ttlMs: LEASE_MS }))
    if (kind === 'postgres') {
      // Both wait on the lease row's lock (on the embedded database the blocker's transaction holds its one
      // session: the two run one after the other once it ends).
      const observer = createPool({ connectionString: url, max: 1 })
      let waiting = 0
      try {
        for (let waited = 0; waiting < 2 && waited < 5_000; waited += 10) {
          await new Promise((resolve) => setTimeout(resolve, 10))
          const { rows } = await observer.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          )
          waiting = rows[0]!.n
        }
      } finally {
        await observer.end()
      }
      assert.equal(waiting, 2, 'both writes wait on the lease row')
    }
    await blocker.query('COMMIT')
    blocker.release()
    const outcomes: BatchWriteOutcome[] = await Promise.all(racing)
    assert.deepEqual(outcomes.sort(), ['head moved', 'written'])
    const after = await state()
    assert.equal(after.seq, before.seq + 3)
    assert.equal(after.records, before.records + 3)
    assert.equal(after.intake, 0)
  })

  it('is prepared on a connection taken from a pool that prepares statements, as the sequencer takes one', async (t) => {
    const { holder, from, batch, url } = await readBatch(t)
    const preparing = createPool({ connectionString: url, max: 1, namedStatements: true })
    const client = await preparing.connect()
    t.after(async () => {
      client.release()
      await preparing.end()
    })
    assert.equal(await writeSequencedBatch(client, batch, { from, holder, ttlMs: LEASE_MS }), 'written')
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE '%INSERT INTO audit_records%'`,
    )
    assert.equal(rows[0]!.n, 1)
  })
})
