import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it, type TestContext } from 'node:test'
import fc from 'fast-check'
import type { PoolClient } from 'pg'
import { appendAuditRecords } from '../../../src/audit-log/append.ts'
import { lingerLeft, Sequencer, type SequencerTiming } from '../../../src/audit-log/sequencer/sequencer.ts'
import { createPool, withTransaction } from '../../../src/db/pool.ts'
import { buildTestApp, type TestApp } from '../../helpers/app.ts'
import { createTestDatabase } from '../../helpers/database.ts'

class RolledBack extends Error {}

interface Plan {
  replica: number
  entries: number
  rollback: boolean
}

/** One change: `entries` audit entries in one transaction on the given replica, committed or rolled back. */
async function change(app: TestApp, marker: string, plan: Plan): Promise<void> {
  await withTransaction(app.app.db, async (tx) => {
    await appendAuditRecords(
      tx,
      Array.from({ length: plan.entries }, (_, i) => ({
        kind: 'key.created' as const,
        actor: 'system',
        data: { marker, part: i },
      })),
    )
    if (plan.rollback) throw new RolledBack()
  }).catch((err) => {
    if (!(err instanceof RolledBack)) throw err
  })
}

async function logState(app: TestApp) {
  await app.app.services.auditLog.catchUp()
  const { rows } = await app.app.db.query<{ seq: number; marker: string | null; part: number | null }>(
    `SELECT seq, data->>'marker' AS marker, (data->>'part')::int AS part FROM audit_records ORDER BY seq`,
  )
  const intake = await app.app.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_intake')
  return { rows, intakeLeft: intake.rows[0]!.n }
}

/**
 * A test app whose own sequencer has handed its lease over, and sequencers to start in its place on a pool of `max`
 * connections whose every statement goes through `intercept` (which runs it with `run`). Records the errors they
 * report, the seqs of the batches they announce and each batch's size; everything stops when the test ends.
 */
async function ownSequencer(
  t: TestContext,
  max: number,
  intercept: (
    run: (...args: unknown[]) => Promise<unknown>,
    args: unknown[],
    client: PoolClient,
  ) => Promise<unknown>,
) {
  const db = await createTestDatabase()
  const app = await buildTestApp(t, { database: db })
  await app.app.services.auditLog.catchUp()
  await app.app.services.auditLog.sequencer.stop()
  const pool = createPool({ connectionString: db.connectionString, max })
  pool.on('connect', (client) => {
    const run = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>
    client.query = ((...args: unknown[]) => intercept(run, args, client)) as typeof client.query
  })
  const errors: unknown[] = []
  const seen: number[] = []
  const batchSizes: number[] = []
  let sequencer: Sequencer | undefined
  t.after(async () => {
    await sequencer?.stop()
    await pool.end()
    await db.stop()
  })
  return {
    app,
    errors,
    seen,
    batchSizes,
    start(timing: Partial<SequencerTiming> = {}): Sequencer {
      sequencer = new Sequencer(pool, {
        timing: { batchSize: 5, ...timing },
        signCheckpoint: async () => 0,
        checkpointIntervalMs: 3_600_000,
        onError: (err) => errors.push(err),
      })
      sequencer.onBatch((batch) => {
        seen.push(...batch.records.map((r) => r.seq))
        batchSizes.push(batch.records.length)
      })
      sequencer.start()
      return sequencer
    },
    /** Waits (up to 5 s) until the batch that placed `seq` is announced: it may still be on its way. */
    async announced(seq: number): Promise<void> {
      for (let waited = 0; !seen.includes(seq) && waited < 5_000; waited += 10) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    },
  }
}

/** `ownSequencer` on a pool of 2 connections whose statements' texts are recorded, in the order sent. */
async function recordingSequencer(t: TestContext) {
  const sent: string[] = []
  const own = await ownSequencer(t, 2, (run, args) => {
    const first = args[0]
    sent.push(typeof first === 'string' ? first : String((first as { text?: string }).text))
    return run(...args)
  })
  return { ...own, sent }
}

describe('the sequencer', () => {
  it('sequences every committed entry once and no rolled-back one, gapless, under concurrent writers on 3 replicas', async (t) => {
    const db = await createTestDatabase()
    const replicas: TestApp[] = []
    for (let i = 0; i < 3; i++) replicas.push(await buildTestApp(t, { database: db }))
    t.after(() => db.stop())
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            replica: fc.integer({ min: 0, max: 2 }),
            entries: fc.integer({ min: 1, max: 4 }),
            rollback: fc.boolean(),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        async (plans) => {
          run++
          const markers = plans.map((_, i) => `run-${run}-change-${i}`)
          await Promise.all(plans.map((plan, i) => change(replicas[plan.replica]!, markers[i]!, plan)))
          // Read through another replica than most writes went to: read-your-writes holds across replicas.
          const { rows, intakeLeft } = await logState(replicas[run % 3]!)
          assert.equal(intakeLeft, 0, 'nothing committed is left unsequenced')
          assert.deepEqual(
            rows.map((r) => r.seq),
            rows.map((_, i) => i + 1),
            'seq is gapless from 1',
          )
          plans.forEach((plan, i) => {
            const mine = rows.filter((r) => r.marker === markers[i])
            if (plan.rollback) {
              assert.equal(mine.length, 0, 'a rolled-back change has no record')
            } else {
              assert.deepEqual(
                mine.map((r) => r.part),
                Array.from({ length: plan.entries }, (_, part) => part),
                "a change's records appear once each, in the order written",
              )
            }
          })
        },
      ),
      { numRuns: 8 },
    )
    const ops = await replicas[0]!.key('ops')
    const verify = await replicas[1]!.request(ops, { method: 'GET', url: '/v1/audit/verify' })
    assert.equal(verify.json().ok, true, verify.body)
    assert.equal(
      replicas.filter((r) => r.app.services.auditLog.sequencer.isLeader).length,
      1,
      'one lease holder',
    )
  })

  it('is taken over by another replica within 5 s when the lease holder dies without handing over', async (t) => {
    const db = await createTestDatabase()
    const replicas: TestApp[] = []
    for (let i = 0; i < 2; i++) replicas.push(await buildTestApp(t, { database: db }))
    t.after(() => db.stop())
    await logState(replicas[0]!)
    const holder = replicas.find((r) => r.app.services.auditLog.sequencer.isLeader)!
    const survivor = replicas.find((r) => r !== holder)!
    // As kill -9 would leave it: the holder stops working, its lease stays until it expires.
    await holder.app.services.auditLog.sequencer.stop({ handOver: false })
    const diedAt = Date.now()
    await change(survivor, 'after-the-crash', { replica: 1, entries: 2, rollback: false })
    const { rows, intakeLeft } = await logState(survivor)
    const tookOverMs = Date.now() - diedAt
    assert.equal(intakeLeft, 0)
    assert.deepEqual(
      rows.filter((r) => r.marker === 'after-the-crash').map((r) => r.part),
      [0, 1],
    )
    assert.ok(survivor.app.services.auditLog.sequencer.isLeader)
    assert.ok(tookOverMs < 5_000, `took over after ${tookOverMs} ms`)
    t.diagnostic(`the surviving replica sequenced the next change ${tookOverMs} ms after the holder died`)
  })

  it('hands the lease over at once on a graceful stop', async (t) => {
    const db = await createTestDatabase()
    const replicas: TestApp[] = []
    for (let i = 0; i < 2; i++) replicas.push(await buildTestApp(t, { database: db }))
    t.after(() => db.stop())
    await logState(replicas[0]!)
    const holder = replicas.find((r) => r.app.services.auditLog.sequencer.isLeader)!
    const survivor = replicas.find((r) => r !== holder)!
    await holder.app.services.auditLog.sequencer.stop()
    const stoppedAt = Date.now()
    await change(survivor, 'after-the-stop', { replica: 1, entries: 1, rollback: false })
    await logState(survivor)
    // The survivor tries for the lease once a second; it need not wait for the 3 s lease to expire.
    assert.ok(Date.now() - stoppedAt < 2_000, `took over after ${Date.now() - stoppedAt} ms`)
  })

  it('lists every change committed before a request: in one statement when sequenced, after waiting when not', async (t) => {
    const app = await buildTestApp(t)
    const ops = await app.key('ops')
    const markers = async () => {
      const res = await app.request(ops, {
        method: 'GET',
        url: '/v1/audit/records?kind=key.created&limit=500',
      })
      assert.equal(res.statusCode, 200, res.body)
      return res
        .json()
        .items.map((r: { data: { marker?: string } }) => r.data.marker)
        .filter(Boolean)
    }
    await change(app, 'sequenced', { replica: 0, entries: 2, rollback: false })
    await app.app.services.auditLog.catchUp()
    assert.deepEqual(await markers(), ['sequenced', 'sequenced'])

    // The sequencer is behind (stopped): the page waits for it rather than answering without the change.
    const sequencer = app.app.services.auditLog.sequencer
    await sequencer.stop({ handOver: false })
    await change(app, 'waiting', { replica: 0, entries: 1, rollback: false })
    const page = markers()
    let answered = false
    void page.then(() => {
      answered = true
    })
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(answered, false, 'no answer while the change is not in the log')
    sequencer.start()
    assert.deepEqual(await page, ['sequenced', 'sequenced', 'waiting'])
  })

  it('does not keep a reader waiting while the sequencer lets entries gather', async (t) => {
    // A linger far beyond the 5 s a read waits for its writes before answering 503 (and the lease renewal with
    // it: the linger is at most that).
    const app = await buildTestApp(t, {
      config: { sequencer: { lingerMs: 60_000, renewMs: 60_000, leaseMs: 120_000 } },
    })
    const ops = await app.key('ops')
    for (const marker of ['first', 'second', 'third']) {
      await change(app, marker, { replica: 0, entries: 1, rollback: false })
      const res = await app.request(ops, {
        method: 'GET',
        url: '/v1/audit/records?kind=key.created&limit=500',
      })
      assert.equal(res.statusCode, 200, res.body)
      const markers = res.json().items.map((r: { data: { marker?: string } }) => r.data.marker)
      assert.ok(markers.includes(marker), `${marker} is listed`)
    }
  })

  it('sequences a backlog batch after batch, each a read and one write that commits on its own; a stop mid-burst loses nothing', async (t) => {
    const { app, errors, seen, start, announced, sent } = await recordingSequencer(t)
    const writes = () => sent.filter((text) => text.includes('INSERT INTO audit_records'))
    // Each batch's read (r) and write (w), in the order sent.
    const batchSteps = () =>
      sent
        .map((text) =>
          text.includes('FROM audit_intake ORDER BY id LIMIT')
            ? 'r'
            : text.includes('INSERT INTO audit_records')
              ? 'w'
              : '',
        )
        .join('')

    const sequencer = start()
    await change(app, 'burst', { replica: 0, entries: 40, rollback: false })
    const { rows } = await logState(app)
    const burst = rows.filter((r) => r.marker === 'burst').map((r) => r.seq)
    assert.equal(burst.length, 40)
    // 40 entries in batches of 5: at least 8 batches, each read and then written, with no transaction around
    // them (nothing is held open while the sequencer computes a batch).
    assert.ok(writes().length >= 8, `${writes().length} batches written`)
    assert.doesNotMatch(batchSteps(), /ww/, 'every write follows a read of its own')
    assert.deepEqual(
      sent.filter((text) => /\b(BEGIN|COMMIT|ROLLBACK)\b/.test(text)),
      [],
      'no explicit transaction',
    )
    await announced(burst.at(-1)!)
    assert.deepEqual(
      [...new Set(seen)].sort((a, b) => a - b),
      burst,
      'every written batch is announced',
    )

    // Stopped in the middle of a burst: whatever it had written is in the log, and the next holder continues
    // with the rest.
    await change(app, 'second burst', { replica: 0, entries: 40, rollback: false })
    await new Promise((resolve) => setImmediate(resolve))
    await sequencer.stop()
    start()
    const after = await logState(app)
    assert.equal(after.intakeLeft, 0)
    assert.equal(after.rows.filter((r) => r.marker === 'second burst').length, 40)
    assert.deepEqual(
      after.rows.map((r) => r.seq),
      after.rows.map((_, i) => i + 1),
      'seq is gapless from 1',
    )
    const ops = await app.key('ops')
    const verify = await app.request(ops, { method: 'GET', url: '/v1/audit/verify' })
    assert.equal(verify.json().ok, true, verify.body)
    assert.deepEqual(errors, [])
  })

  it('lets entries gather after a batch that was not full, until a reader waits or the sequencer stops', async (t) => {
    const { app, errors, seen, batchSizes, start, announced, sent } = await recordingSequencer(t)
    const before = (await logState(app)).rows.length
    // A linger longer than the test, and the lease with it.
    const sequencer = start({ lingerMs: 60_000, renewMs: 60_000, leaseMs: 120_000 })
    // Idle, a commit wakes it at once: a batch of one, written (and so committed), then the linger.
    await change(app, 'first', { replica: 0, entries: 1, rollback: false })
    await announced(before + 1)
    assert.deepEqual(seen, [before + 1])
    assert.match(sent.at(-1)!, /INSERT INTO audit_records/, 'the batch is written before the linger')
    for (const marker of ['a', 'b', 'c'])
      await change(app, marker, { replica: 0, entries: 1, rollback: false })
    await new Promise((resolve) => setTimeout(resolve, 200))
    assert.deepEqual(seen, [before + 1], 'the three changes wait for the linger to end')
    // A reader waiting for its writes ends the linger: the three go in one batch.
    sequencer.hurry()
    await announced(before + 4)
    assert.deepEqual(batchSizes, [1, 3])
    // A backlog (batches of 5) is sequenced batch after batch, with no linger until a batch is not full.
    await change(app, 'backlog', { replica: 0, entries: 12, rollback: false })
    sequencer.hurry()
    await announced(before + 16)
    assert.deepEqual(batchSizes, [1, 3, 5, 5, 2])
    // A stop ends a linger at once too (a last change is left to the next holder).
    await change(app, 'last', { replica: 0, entries: 1, rollback: false })
    const stopped = await Promise.race([
      sequencer.stop().then(() => true),
      new Promise((resolve) => setTimeout(() => resolve(false), 5_000)),
    ])
    assert.equal(stopped, true, 'stop returned while lingering')
    assert.deepEqual(batchSizes, [1, 3, 5, 5, 2])
    assert.deepEqual(errors, [])
  })

  it('counts the linger from when the first entry of the next batch was committed, not from the end of a batch', async (t) => {
    // The first batch's write goes through and then takes 2 s to return: the batch is in flight meanwhile.
    let slowWrites = 1
    const { app, errors, batchSizes, start, announced } = await ownSequencer(t, 2, async (run, args) => {
      const result = await run(...args)
      const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string }).text)
      if (text.includes('INSERT INTO audit_records') && slowWrites > 0) {
        slowWrites -= 1
        await new Promise((resolve) => setTimeout(resolve, 2_000))
      }
      return result
    })
    const before = (await logState(app)).rows.length
    // Written before the sequencer starts: its first batch holds it.
    await change(app, 'first', { replica: 0, entries: 1, rollback: false })
    const sequencer = start({ lingerMs: 1_500, renewMs: 60_000, leaseMs: 120_000 })
    const announcedAt: number[] = []
    sequencer.onBatch(() => announcedAt.push(Date.now()))
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(announcedAt.length, 0, 'the first batch is still in flight')
    await change(app, 'second', { replica: 0, entries: 1, rollback: false })
    await announced(before + 2)
    assert.deepEqual(batchSizes, [1, 1])
    // It gathered for the 1.7 s the first batch was still in flight, longer than the linger: the next batch is
    // read as soon as the first is written, not a whole linger later.
    const gap = announcedAt[1]! - announcedAt[0]!
    assert.ok(gap < 1_000, `the second batch came ${gap} ms after the first`)
    // Each batch starts gathering afresh: a change after the second batch waits out its linger.
    await change(app, 'third', { replica: 0, entries: 1, rollback: false })
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.equal(announcedAt.length, 2, 'the third change waits for the linger')
    await announced(before + 3)
    assert.deepEqual(batchSizes, [1, 1, 1])
    assert.deepEqual(errors, [])
  })

  it('lingers what is left of lingerMs since the first entry of the next batch was committed', () => {
    assert.equal(lingerLeft(20, null, 1_000), 20, 'nothing committed here yet: the whole linger')
    assert.equal(lingerLeft(20, 995, 1_000), 15)
    assert.equal(lingerLeft(20, 980, 1_000), 0)
    assert.equal(lingerLeft(20, 500, 1_000), 0)
    assert.equal(lingerLeft(20, 1_010, 1_000), 20, 'a clock that stepped back never lengthens it')
    assert.equal(lingerLeft(0, 1_000, 1_000), 0)
  })

  it('lingers no longer than a lease renewal', () => {
    const db = { connect: () => Promise.reject(new Error('unused')) } as never
    const capped = new Sequencer(db, {
      timing: { lingerMs: 60_000, renewMs: 1_000 },
      signCheckpoint: async () => 0,
      checkpointIntervalMs: 1_000,
      onError: () => {},
    })
    assert.equal(capped.lingerMs, 1_000)
  })

  it('announces a batch whose write went through but whose answer was lost, and carries on', async (t) => {
    // The first write runs, then its connection breaks before the answer is read: nothing more can be asked on it.
    let failures = 0
    const { app, errors, seen, start, announced } = await ownSequencer(t, 1, async (run, args, client) => {
      const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string }).text)
      if (failures === 0 && text.includes('INSERT INTO audit_records')) {
        failures++
        await run(...args)
        ;(client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()
        throw new Error('the answer to the write was lost')
      }
      return run(...args)
    })
    start()
    await change(app, 'burst', { replica: 0, entries: 20, rollback: false })
    const { rows, intakeLeft } = await logState(app)
    const burst = rows.filter((r) => r.marker === 'burst').map((r) => r.seq)
    assert.equal(intakeLeft, 0)
    assert.equal(burst.length, 20)
    assert.equal(failures, 1)
    assert.deepEqual(
      errors.map((err) => (err as Error).message),
      ['the answer to the write was lost'],
    )
    await announced(burst.at(-1)!)
    assert.deepEqual(
      [...new Set(seen)].sort((a, b) => a - b),
      burst,
      'the batch whose answer was lost is announced too',
    )
  })

  it('stops working when its write finds the lease taken, and sequences what waited once it holds it again', async (t) => {
    // Between a batch's read and its write another replica takes the lease, as after a long pause of this one.
    const other = randomUUID()
    let stolen = false
    const { app, errors, seen, start } = await ownSequencer(t, 1, async (run, args) => {
      const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string }).text)
      if (!stolen && text.includes('INSERT INTO audit_records')) {
        stolen = true
        await app.app.db.query(
          `UPDATE sequencer_lease SET holder = $1, expires_at = clock_timestamp() + interval '1 hour'`,
          [other],
        )
      }
      return run(...args)
    })
    const before = (await logState(app)).rows.length
    const sequencer = start({ renewMs: 50 })
    await change(app, 'waits', { replica: 0, entries: 3, rollback: false })
    for (let waited = 0; !stolen && waited < 5_000; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    assert.ok(stolen, 'a write was attempted')
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(sequencer.isLeader, false, 'it no longer counts itself the holder')
    assert.deepEqual(seen, [], 'nothing was written or announced')
    const waiting = await app.app.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_intake')
    assert.equal(waiting.rows[0]!.n, 3)

    // The other replica lets the lease go: this one takes it back and sequences the entries.
    await app.app.db.query(`UPDATE sequencer_lease SET expires_at = '-infinity' WHERE holder = $1`, [other])
    const { rows, intakeLeft } = await logState(app)
    assert.equal(intakeLeft, 0)
    assert.deepEqual(
      rows.filter((r) => r.marker === 'waits').map((r) => r.seq),
      [before + 1, before + 2, before + 3],
    )
    assert.equal(sequencer.isLeader, true)
    assert.deepEqual(errors, [])
  })

  it('keeps the right edge it wrote between batches, and reads it when the head is not the one it wrote', async (t) => {
    // Statements of the sequencers' pool that read the right edge from the stored nodes; and one write made to
    // fail before it runs (the batch is never written).
    let edgeReads = 0
    let failWrite = false
    const { app, errors, start } = await ownSequencer(t, 1, async (run, args) => {
      const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string }).text)
      if (text.includes('FROM merkle_nodes n')) edgeReads++
      if (failWrite && text.includes('INSERT INTO audit_records')) {
        failWrite = false
        throw new Error('the write did not go through')
      }
      return run(...args)
    })
    const ops = await app.key('ops')
    const verifies = async (label: string) => {
      const { rows, intakeLeft } = await logState(app)
      assert.equal(intakeLeft, 0, label)
      const res = await app.request(ops, { method: 'GET', url: '/v1/audit/verify' })
      assert.equal(res.json().ok, true, `${label}: ${res.body}`)
      return rows
    }

    const first = start()
    await change(app, 'first burst', { replica: 0, entries: 40, rollback: false })
    await verifies('first burst')
    assert.equal(edgeReads, 1, 'read once, when the holder took the lease; kept for the next 7+ batches')

    // Another holder extends the log: the first one's edge is stale when it holds the lease again.
    await first.stop()
    const second = start()
    await change(app, 'second holder', { replica: 0, entries: 12, rollback: false })
    await verifies('second holder')
    assert.equal(edgeReads, 2, 'the new holder reads it once')
    await second.stop()
    first.start()
    t.after(() => first.stop())
    await change(app, 'first again', { replica: 0, entries: 12, rollback: false })
    await verifies('first holder again')
    assert.equal(edgeReads, 3, 'the returning holder reads it: the head is not the one it wrote')

    // A batch whose write fails is never written: the edge it computed is not the stored tree's.
    failWrite = true
    await change(app, 'lost write', { replica: 0, entries: 30, rollback: false })
    const rows = await verifies('after a write failed')
    assert.equal(failWrite, false, 'a write was made to fail')
    assert.equal(rows.filter((r) => r.marker === 'lost write').length, 30)
    assert.ok(edgeReads >= 4, `${edgeReads} reads: the batch after the failure read the edge`)
    assert.deepEqual(
      errors.map((err) => (err as Error).message),
      ['the write did not go through'],
    )
  })
})
