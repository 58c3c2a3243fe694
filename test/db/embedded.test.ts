import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { connectionStringFor, type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/db/embedded.ts'
import { firstToLoad } from '../../src/db/embedded-child.ts'
import {
  commandsDue,
  FREEZE_AGE,
  type MaintenanceRun,
  maintenanceFor,
  type TableActivity,
} from '../../src/db/embedded-maintenance.ts'
import { PGliteWireServer } from '../../src/db/pglite-wire-server.ts'

describe('embedded PostgreSQL over the wire protocol', () => {
  let db: EmbeddedPostgres
  before(async () => {
    db = await startEmbeddedPostgres()
  })
  after(() => db.stop())

  it('keeps each client’s statements and transactions its own when clients interleave', async (t) => {
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

  it('gives each client its own named statements, as PostgreSQL does per connection', async (t) => {
    const clients = [1, 2, 3].map(() => new pg.Client({ connectionString: db.connectionString }))
    await Promise.all(clients.map((c) => c.connect()))
    t.after(() => Promise.all(clients.map((c) => c.end())))
    // The same name, prepared by each client with its own text: each must run its own, every time.
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(
        clients.map((c, i) =>
          c.query({ name: 'same-name', text: `SELECT ${i}::int + $1::int AS v`, values: [round] }),
        ),
      )
      assert.deepEqual(
        answers.map((r) => r.rows[0].v),
        [0, 1, 2].map((i) => i + round),
      )
    }
  })

  it('deallocates the named statements of a client that leaves, and only its own', async (t) => {
    const leaving = new pg.Client({ connectionString: db.connectionString })
    const staying = new pg.Client({ connectionString: db.connectionString })
    await Promise.all([leaving.connect(), staying.connect()])
    t.after(() => staying.end())
    for (const client of [leaving, staying]) {
      await client.query({ name: 'kept-or-not', text: 'SELECT $1::int AS v', values: [1] })
      await client.query({ name: 'kept-or-not-2', text: 'SELECT $1::text AS v', values: ['x'] })
    }
    const prepared = async () =>
      (
        await staying.query<{ name: string }>(
          `SELECT name FROM pg_prepared_statements WHERE name LIKE 'c%:kept-or-not%' ORDER BY name`,
        )
      ).rows.map((row) => row.name)
    const before = await prepared()
    assert.equal(before.length, 4, `prepared before the client left: ${before.join(', ')}`)
    await leaving.end()
    const deadline = performance.now() + 5000
    let after = await prepared()
    while (after.length > 2 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      after = await prepared()
    }
    assert.equal(after.length, 2, `still prepared: ${after.join(', ')}`)
    // The ones left are the staying client's, which still runs them.
    const { rows } = await staying.query({ name: 'kept-or-not', text: 'SELECT $1::int AS v', values: [7] })
    assert.deepEqual(rows, [{ v: 7 }])
    const owner = (name: string) => name.split(':')[0]
    assert.equal(new Set(after.map(owner)).size, 1)
    assert.ok(!after.map(owner).includes(owner(before.find((name) => !after.includes(name))!)))
  })

  it('answers a batch that fails midway with the error, then serves the same connection on', async (t) => {
    const client = new pg.Client({ connectionString: db.connectionString })
    await client.connect()
    t.after(() => client.end())
    await assert.rejects(client.query('SELECT $1::int AS v', ['not a number']), /invalid input syntax/)
    await assert.rejects(client.query('SELECT 1; SELECT nope; SELECT 3'), /column "nope" does not exist/)
    const { rows } = await client.query('SELECT $1::text AS v', ['still served'])
    assert.deepEqual(rows, [{ v: 'still served' }])
  })

  it('returns a large result intact', async (t) => {
    // Far more than a socket takes at once: the answer is queued, and must not be overwritten by what follows.
    const pool = new pg.Pool({ connectionString: db.connectionString, max: 2 })
    t.after(() => pool.end())
    const text = "SELECT string_agg(md5(i::text), '' ORDER BY i) AS s FROM generate_series(1, $1::int) AS i"
    const expected = (n: number) =>
      Array.from({ length: n }, (_, i) =>
        createHash('md5')
          .update(String(i + 1))
          .digest('hex'),
      ).join('')
    const [big, small] = await Promise.all([pool.query(text, [200_000]), pool.query(text, [3])])
    assert.ok(big.rows[0].s === expected(200_000), 'the 6.4 MB answer differs from what PostgreSQL computed')
    assert.equal(small.rows[0].s, expected(3))
  })

  it('takes a parameter that arrives over many reads intact', async (t) => {
    const client = new pg.Client({ connectionString: db.connectionString })
    await client.connect()
    t.after(() => client.end())
    const value = Array.from({ length: 400_000 }, (_, i) => i.toString(36)).join(',')
    const { rows } = await client.query('SELECT length($1::text) AS n, md5($1::text) AS h', [value])
    assert.deepEqual(rows, [{ n: value.length, h: createHash('md5').update(value).digest('hex') }])
  })

  it('runs in a process of its own, with its own node flags: the caller’s event loop turns while a query runs', async (t) => {
    assert.ok(db.child.pid !== undefined && db.child.pid !== process.pid)
    const flags = (await readFile(`/proc/${db.child.pid}/cmdline`, 'utf8')).split('\0')
    for (const flag of ['--liftoff-only', '--wasm-max-mem-pages=4096'])
      assert.ok(flags.includes(flag), `${flag} in ${flags.join(' ')}`)
    assert.ok(!process.execArgv.some((flag) => flag.includes('liftoff') || flag.includes('wasm')))
    const client = new pg.Client({ connectionString: db.connectionString })
    await client.connect()
    t.after(() => client.end())
    let ticks = 0
    const timer = setInterval(() => ticks++, 5)
    t.after(() => clearInterval(timer))
    const started = performance.now()
    // One statement that keeps PostgreSQL busy for a while: on the caller's thread no timer could fire meanwhile.
    await client.query('SELECT count(*) FROM generate_series(1, 1000000) AS i WHERE md5(i::text) LIKE $1', [
      'a%',
    ])
    const elapsedMs = performance.now() - started
    assert.ok(elapsedMs > 100, `the query took ${elapsedMs} ms: too short to tell`)
    assert.ok(ticks >= 5, `${ticks} timer ticks in ${elapsedMs.toFixed(0)} ms`)
  })

  it('ends a statement that needs more memory than the database may take with an error, and carries on', async (t) => {
    const client = new pg.Client({ connectionString: db.connectionString })
    await client.connect()
    t.after(() => client.end())
    // 300 MB in one value: past the cap of the database's memory (which, once grown, would never shrink).
    await assert.rejects(client.query(`SELECT length(repeat('x', 300000000)) AS n`), /out of memory/)
    const { rows } = await client.query(`SELECT length(repeat('x', 1000000)) AS n`)
    assert.deepEqual(rows, [{ n: 1_000_000 }])
  })

  it('rolls back the transaction of a client that disconnects inside it', async (t) => {
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
})

/** The same connection string with another password (or none). */
function withPassword(connectionString: string, password: string): string {
  const url = new URL(connectionString.replace('@/', '@placeholder/'))
  url.password = password
  return url.toString().replace('@placeholder/', '@/')
}

async function refusal(connectionString: string): Promise<string> {
  const client = new pg.Client({ connectionString })
  client.on('error', () => {})
  try {
    await client.connect()
  } catch (err) {
    return `${(err as { code?: string }).code}: ${(err as Error).message}`
  } finally {
    await client.end().catch(() => {})
  }
  return 'connected'
}

describe('who may open a session on the embedded database', () => {
  it('refuses a client without the password of this start, or with another, before any statement runs', async (t) => {
    const db = await startEmbeddedPostgres()
    t.after(() => db.stop())
    assert.ok('port' in db.address, 'an in-memory database listens on a loopback port')
    assert.equal(db.address.host, '127.0.0.1')
    const bare = `postgres://postgres@127.0.0.1:${db.address.port}/postgres`
    assert.match(await refusal(bare), /^28P01: password authentication failed/)
    assert.match(
      await refusal(withPassword(db.connectionString, 'wrong')),
      /^28P01: password authentication failed/,
    )
    // One character short: a prefix of the password is no password.
    const password = new URL(db.connectionString).password
    assert.match(await refusal(withPassword(db.connectionString, password.slice(0, -1))), /^28P01/)
    // The server goes on serving the one who knows it.
    const client = new pg.Client({ connectionString: db.connectionString })
    await client.connect()
    const { rows } = await client.query('SELECT current_user AS who')
    await client.end()
    assert.deepEqual(rows, [{ who: 'postgres' }])
  })

  it('makes a new password at every start', async () => {
    const first = await startEmbeddedPostgres()
    const second = await startEmbeddedPostgres()
    await Promise.all([first.stop(), second.stop()])
    assert.notEqual(new URL(first.connectionString).password, new URL(second.connectionString).password)
    assert.match(new URL(first.connectionString).password, /^[0-9a-f]{64}$/)
  })

  it('serves a data dir over a Unix socket in a 0700 directory, and writes the password nowhere', async (t) => {
    const parent = await mkdtemp(join(tmpdir(), 'arbiter-embedded-socket-'))
    t.after(() => rm(parent, { recursive: true, force: true }))
    const dataDir = join(parent, 'data')
    const db = await startEmbeddedPostgres({ dataDir })
    t.after(() => db.stop())
    assert.deepEqual(db.address, { path: join(dataDir, 'socket', '.s.PGSQL.5432') })
    assert.equal((await stat(dataDir)).mode & 0o777, 0o700)
    assert.equal((await stat(join(dataDir, 'socket'))).mode & 0o777, 0o700)
    assert.ok((await stat(db.address.path)).isSocket())
    // No TCP port: the thread's only listener is the socket.
    assert.doesNotMatch(db.connectionString, /127\.0\.0\.1|localhost/)
    assert.match(await refusal(withPassword(db.connectionString, 'wrong')), /^28P01/)
    const client = new pg.Client({ connectionString: db.connectionString })
    await client.connect()
    await client.query('SELECT 1')
    await client.end()
    const password = new URL(db.connectionString.replace('@/', '@placeholder/')).password
    const files = (await readdir(dataDir, { recursive: true })).map((name) => join(dataDir, name))
    for (const file of files) {
      if (!(await stat(file)).isFile()) continue
      assert.equal((await readFile(file)).includes(password), false, `${file} holds the password`)
    }
  })

  it('tightens a socket directory that was left open to others back to 0700', async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-embedded-socket-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    await mkdir(join(dataDir, 'socket'), { mode: 0o777 })
    await chmod(join(dataDir, 'socket'), 0o777)
    const db = await startEmbeddedPostgres({ dataDir })
    t.after(() => db.stop())
    assert.equal((await stat(join(dataDir, 'socket'))).mode & 0o777, 0o700)
  })
})

describe('embedded PostgreSQL in a data directory', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'arbiter-embedded-'))
  })
  after(() => rm(dir, { recursive: true, force: true }))

  it('persists data across restarts and refuses a second process on it', async (t) => {
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

  it('stop() ends its process and releases the directory', async () => {
    const db = await startEmbeddedPostgres({ dataDir: dir })
    const exited = new Promise<number>((resolve) => db.child.once('exit', resolve))
    assert.ok(existsSync(join(dir, 'embedded.pid')))
    await db.stop()
    assert.equal(await Promise.race([exited, 'still running']), 0)
    assert.equal(existsSync(join(dir, 'embedded.pid')), false)
    await assert.rejects(
      new pg.Client({ connectionString: db.connectionString }).connect(),
      /ENOENT|ECONNREFUSED/,
    )
  })

  it('reports a process that dies while in use, and its clients fail instead of waiting', async () => {
    let reported: Error | undefined
    const db = await startEmbeddedPostgres({ dataDir: dir, onUnexpectedExit: (err) => (reported = err) })
    const client = new pg.Client({ connectionString: db.connectionString })
    client.on('error', () => {})
    await client.connect()
    const gone = once(db.child, 'close')
    db.child.kill('SIGKILL')
    await assert.rejects(client.query('SELECT 1'))
    await gone
    await db.stop()
    assert.match(
      String(reported?.message),
      /embedded database process exited unexpectedly \(signal SIGKILL\)/,
    )
  })

  it('by default raises a dead database process as an uncaught error: the process exits and says why', async () => {
    const script = [
      `import { startEmbeddedPostgres } from ${JSON.stringify(new URL('../../src/db/embedded.ts', import.meta.url).href)}`,
      `const db = await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dir)} })`,
      "db.child.kill('SIGKILL')",
      'setTimeout(() => {}, 30_000)',
    ].join('\n')
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    })
    assert.equal(child.status, 1, child.stderr)
    assert.match(child.stderr, /embedded database process exited unexpectedly/)
  })

  it('rejects its start with PostgreSQL’s reason when the directory is damaged, and releases it', async (t) => {
    const damaged = await mkdtemp(join(tmpdir(), 'arbiter-embedded-damaged-'))
    t.after(() => rm(damaged, { recursive: true, force: true }))
    const db = await startEmbeddedPostgres({ dataDir: damaged })
    await db.stop()
    await writeFile(join(damaged, 'pgdata', 'PG_VERSION'), '9\n')
    await assert.rejects(
      startEmbeddedPostgres({ dataDir: damaged }),
      /could not open the embedded database .*database files are incompatible with server/,
    )
    assert.equal(existsSync(join(damaged, 'embedded.pid')), false)
  })
})

describe('embedded PostgreSQL maintenance (what autovacuum does on a server)', () => {
  const table = (activity: Partial<TableActivity>): TableActivity => ({
    name: 'public.t',
    rows: 0,
    changedSinceAnalyze: 0,
    deadRows: 0,
    insertedSinceVacuum: 0,
    ...activity,
  })

  it('applies autovacuum’s default rules to each table', () => {
    assert.equal(maintenanceFor(table({ changedSinceAnalyze: 50 })), null)
    assert.equal(maintenanceFor(table({ changedSinceAnalyze: 51 })), 'ANALYZE')
    assert.equal(maintenanceFor(table({ rows: 10_000, changedSinceAnalyze: 1_050 })), null)
    assert.equal(maintenanceFor(table({ rows: 10_000, changedSinceAnalyze: 1_051 })), 'ANALYZE')
    assert.equal(maintenanceFor(table({ rows: 10_000, deadRows: 2_050 })), null)
    assert.equal(maintenanceFor(table({ rows: 10_000, deadRows: 2_051 })), 'VACUUM')
    assert.equal(maintenanceFor(table({ rows: 10_000, insertedSinceVacuum: 3_000 })), null)
    assert.equal(maintenanceFor(table({ rows: 10_000, insertedSinceVacuum: 3_001 })), 'VACUUM')
    assert.equal(
      maintenanceFor(table({ rows: 10_000, deadRows: 2_051, changedSinceAnalyze: 2_051 })),
      'VACUUM (ANALYZE)',
    )
    assert.equal(
      maintenanceFor(table({ rows: -1, changedSinceAnalyze: 51 })),
      'ANALYZE',
      'never counted: -1 rows',
    )
  })

  it('freezes the whole database first once its oldest unfrozen transaction is 150 million old', () => {
    const tables = [table({ name: 'public.a', changedSinceAnalyze: 51 }), table({ name: 'public.b' })]
    assert.deepEqual(commandsDue(tables, FREEZE_AGE), ['ANALYZE public.a'])
    assert.deepEqual(commandsDue(tables, FREEZE_AGE + 1), ['VACUUM', 'ANALYZE public.a'])
    assert.deepEqual(commandsDue([], FREEZE_AGE + 1), ['VACUUM'])
  })

  it('analyzes a table once enough of it changed, vacuums it once enough rows died, and leaves the rest', async (t) => {
    const runs: MaintenanceRun[] = []
    const db = await startEmbeddedPostgres({
      maintenanceIntervalMs: 30,
      onMaintenance: (run) => runs.push(run),
    })
    const client = new pg.Client({ connectionString: db.connectionString })
    t.after(async () => {
      await client.end()
      await db.stop()
    })
    await client.connect()
    await client.query('CREATE TABLE grown (id int PRIMARY KEY, kind text NOT NULL)')
    await client.query('CREATE TABLE quiet (id int PRIMARY KEY)')
    await client.query('INSERT INTO quiet VALUES (1)')
    const ran = () => runs.flatMap((run) => run.commands)
    const waitFor = async (what: string, done: () => Promise<boolean> | boolean) => {
      const deadline = performance.now() + 15_000
      while (!(await done()) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      assert.ok(await done(), `${what}; ran: ${ran().join(', ')}`)
    }
    const analyzed = async () =>
      (
        await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stats WHERE tablename = 'grown' AND attname = 'kind'`,
        )
      ).rows[0]!.n === 1
    // 50 changed rows are not more than 50: several ticks pass (and the counters reach the statistics), nothing runs.
    await client.query(`INSERT INTO grown SELECT i, 'k' || i % 3 FROM generate_series(0, 49) AS i`)
    await new Promise((resolve) => setTimeout(resolve, 1500))
    assert.deepEqual(ran(), [])
    // In one statement: row by row, a tick could analyze the table halfway and then again (it is due again once
    // 50 + 10% more rows changed), as a slow machine showed.
    await client.query(`INSERT INTO grown SELECT i, 'k' || i % 3 FROM generate_series(50, 299) AS i`)
    await waitFor('grown is analyzed', analyzed)
    assert.deepEqual(ran(), ['ANALYZE public.grown'])
    // 200 dead rows: more than 50 + 20% of 300.
    await client.query(`UPDATE grown SET kind = 'changed' WHERE id < 200`)
    await waitFor('grown is vacuumed', () => ran().length === 2)
    assert.deepEqual(ran(), ['ANALYZE public.grown', 'VACUUM (ANALYZE) public.grown'])
    const { rows } = await client.query<{ relname: string; vacuumed: boolean }>(
      `SELECT relname, last_vacuum IS NOT NULL AS vacuumed FROM pg_stat_user_tables ORDER BY relname`,
    )
    assert.deepEqual(rows, [
      { relname: 'grown', vacuumed: true },
      { relname: 'quiet', vacuumed: false },
    ])
  })

  describe('the wire server’s own work on the session', () => {
    let pglite: PGlite
    let server: PGliteWireServer
    let url: string
    before(async () => {
      pglite = await PGlite.create()
      server = new PGliteWireServer(pglite, {
        listen: { host: '127.0.0.1', port: 0 },
        maxConnections: 4,
        password: 'test',
      })
      url = connectionStringFor(await server.start(), 'test')
    })
    after(async () => {
      await server.stop()
      await pglite.close()
    })

    it('waits while a client holds a transaction open', async (t) => {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      t.after(() => client.end())
      const order: string[] = []
      await client.query('BEGIN')
      const chore = server.whenIdle(async (db) => {
        order.push('chore')
        return db.isInTransaction()
      })
      await new Promise((resolve) => setTimeout(resolve, 100))
      order.push('commit')
      await client.query('COMMIT')
      assert.equal(await chore, false)
      assert.deepEqual(order, ['commit', 'chore'])
    })

    it('takes turns with the clients: a query waiting behind queued chores waits for one of them, not all', async (t) => {
      const holder = new pg.Client({ connectionString: url })
      const waiter = new pg.Client({ connectionString: url })
      await Promise.all([holder.connect(), waiter.connect()])
      t.after(() => Promise.all([holder.end(), waiter.end()]))
      await holder.query('CREATE TABLE turns (n serial PRIMARY KEY, name text NOT NULL)')
      // The holder's transaction keeps the session: the chores and the waiter's statement queue up behind it. Each
      // records its turn in the database, so the order is the session's, not that of the answers' arrival.
      await holder.query('BEGIN')
      const chores = [1, 2, 3, 4].map((i) =>
        server.whenIdle((db) => db.query('INSERT INTO turns (name) VALUES ($1)', [`chore ${i}`])),
      )
      const query = waiter.query(`INSERT INTO turns (name) VALUES ('client')`)
      await new Promise((resolve) => setTimeout(resolve, 100))
      await holder.query('COMMIT')
      await Promise.all([...chores, query])
      const { rows } = await holder.query<{ name: string }>('SELECT name FROM turns ORDER BY n')
      assert.deepEqual(
        rows.map((row) => row.name),
        ['chore 1', 'client', 'chore 2', 'chore 3', 'chore 4'],
      )
    })

    it('abandons work still waiting when it stops, and refuses more', async () => {
      const own = await PGlite.create()
      const stopping = new PGliteWireServer(own, {
        listen: { host: '127.0.0.1', port: 0 },
        maxConnections: 4,
        password: 'test',
      })
      const client = new pg.Client({ connectionString: connectionStringFor(await stopping.start(), 'test') })
      client.on('error', () => {})
      await client.connect()
      await client.query('BEGIN')
      const waiting = stopping.whenIdle(async () => 'ran')
      await stopping.stop()
      await assert.rejects(waiting, /stopped/)
      await assert.rejects(
        stopping.whenIdle(async () => 'ran'),
        /stopped/,
      )
      await own.close()
    })
  })
})

describe('starting the database process', () => {
  /** A stand-in process: loads at once, never, or exits. */
  const thread = (behaviour: 'loads' | 'hangs' | 'exits') => {
    const terminated = { value: false }
    const never = new Promise<never>(() => {})
    return {
      behaviour,
      terminated,
      loaded: behaviour === 'loads' ? Promise.resolve('loaded') : never,
      exited: behaviour === 'exits' ? Promise.resolve(1) : never,
      kill: async () => {
        terminated.value = true
        return 1
      },
    }
  }

  it('ends a process that never loads its modules and starts another', async () => {
    const started: ReturnType<typeof thread>[] = []
    const plan = ['hangs', 'hangs', 'loads'] as const
    const got = await firstToLoad(
      () => {
        started.push(thread(plan[started.length]!))
        return started.at(-1)!
      },
      20,
      3,
    )
    assert.equal(got, started[2])
    assert.deepEqual(
      started.map((t) => t.terminated.value),
      [true, true, false],
    )
  })

  it('gives up after the last attempt, and does not restart a process that exited (its report says why)', async () => {
    let starts = 0
    await assert.rejects(
      firstToLoad(
        () => {
          starts++
          return thread('hangs')
        },
        20,
        3,
      ),
      /did not load within 20 ms, 3 times/,
    )
    assert.equal(starts, 3)
    const exiting = thread('exits')
    assert.equal(await firstToLoad(() => exiting, 20, 3), exiting)
    assert.equal(exiting.terminated.value, false)
  })
})
