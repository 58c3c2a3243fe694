import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import pg from 'pg'
import { startEmbeddedPostgres } from '../../src/db/embedded.ts'

describe('embedded PostgreSQL over the wire protocol', () => {
  it('keeps each client’s statements and transactions its own when clients interleave', async (t) => {
    const db = await startEmbeddedPostgres()
    t.after(() => db.stop())
    const pools = [1, 2, 3, 4].map(() => new pg.Pool({ connectionString: db.connectionString, max: 2 }))
    t.after(() => Promise.all(pools.map((p) => p.end())))
    await pools[0]!.query('CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL)')
    await pools[0]!.query('INSERT INTO counters VALUES (1, 0)')
    // Parameterised (extended-protocol) queries from many clients at once: each must get its own answer.
    const echoes = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        pools[i % 4]!.query('SELECT $1::int AS v, $2::text AS s', [i, `x${i}`]).then((r) => r.rows[0]),
      ),
    )
    for (const [i, row] of echoes.entries()) assert.deepEqual(row, { v: i, s: `x${i}` })
    // Read-modify-write transactions from many clients: serialized, no lost update.
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const client = await pools[i % 4]!.connect()
        try {
          await client.query('BEGIN')
          const { rows } = await client.query('SELECT n FROM counters WHERE id = $1 FOR UPDATE', [1])
          await new Promise((resolve) => setTimeout(resolve, 1))
          await client.query('UPDATE counters SET n = $1 WHERE id = 1', [rows[0].n + 1])
          await client.query('COMMIT')
        } finally {
          client.release()
        }
      }),
    )
    const { rows } = await pools[1]!.query('SELECT n FROM counters WHERE id = 1')
    assert.equal(rows[0].n, 40)
  })

  it('rolls back the transaction of a client that disconnects inside it', async (t) => {
    const db = await startEmbeddedPostgres()
    t.after(() => db.stop())
    const a = new pg.Client({ connectionString: db.connectionString })
    a.on('error', () => {})
    await a.connect()
    await a.query('CREATE TABLE t (v int)')
    await a.query('BEGIN')
    await a.query('INSERT INTO t VALUES (1)')
    ;(a as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()
    const b = new pg.Client({ connectionString: db.connectionString })
    await b.connect()
    t.after(() => b.end())
    const { rows } = await b.query('SELECT count(*)::int AS n FROM t')
    assert.equal(rows[0].n, 0)
  })

  it('persists data in its directory across restarts and refuses a second process on it', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'arbiter-embedded-'))
    t.after(() => rm(dir, { recursive: true, force: true }))
    const first = await startEmbeddedPostgres({ dataDir: dir })
    const client = new pg.Client({ connectionString: first.connectionString })
    await client.connect()
    await client.query('CREATE TABLE kept (v text)')
    await client.query(`INSERT INTO kept VALUES ('still here')`)
    await client.end()
    await first.stop()
    const second = await startEmbeddedPostgres({ dataDir: dir })
    t.after(() => second.stop())
    await assert.rejects(startEmbeddedPostgres({ dataDir: dir }), /is using the embedded database/)
    const again = new pg.Client({ connectionString: second.connectionString })
    await again.connect()
    const { rows } = await again.query('SELECT v FROM kept')
    await again.end()
    assert.deepEqual(rows, [{ v: 'still here' }])
  })
})
