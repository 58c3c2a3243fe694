import assert from 'node:assert/strict'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'

/**
 * A first start on the built code (`npm run build` first): the new data dir is a copy of the template the build
 * made (dist/embedded-pgdata), not an initdb run, and every database made from it still gets its own identity
 * from the migrations of its first start.
 */

const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist')
type Embedded = typeof import('../../src/db/embedded.ts')
type Migrate = typeof import('../../src/db/migrate.ts')
type Pools = typeof import('../../src/db/pool.ts')

let embedded: Embedded
let migrations: Migrate
let pools: Pools
let parent: string

before(async () => {
  embedded = (await import(pathToFileURL(join(DIST, 'db', 'embedded.js')).href)) as Embedded
  migrations = (await import(pathToFileURL(join(DIST, 'db', 'migrate.js')).href)) as Migrate
  pools = (await import(pathToFileURL(join(DIST, 'db', 'pool.js')).href)) as Pools
  parent = await mkdtemp(join(tmpdir(), 'arbiter-template-'))
})
after(() => rm(parent, { recursive: true, force: true }))

/** A first start on a new data dir: the database's log id once migrated, and its PG_VERSION file. */
async function firstStart(name: string): Promise<{ logId: string; pgdata: string }> {
  const dataDir = join(parent, name)
  const db = await embedded.startEmbeddedPostgres({ dataDir, maintenanceIntervalMs: 0 })
  try {
    const pool = pools.createPool({ connectionString: db.connectionString, max: 1 })
    try {
      await migrations.migrate(pool)
      const { rows } = await pool.query<{ log_id: string }>('SELECT log_id::text FROM log_identity')
      return { logId: rows[0]!.log_id, pgdata: join(dataDir, 'pgdata') }
    } finally {
      await pool.end()
    }
  } finally {
    await db.stop()
  }
}

describe('the embedded database template', () => {
  it('makes a new data dir a private copy of the build’s template, and each copy its own log', async () => {
    const template = join(DIST, 'embedded-pgdata')
    const a = await firstStart('a')
    const b = await firstStart('b')
    // The copy keeps the template's timestamps: initdb would have written PG_VERSION now.
    const copied = (await stat(join(a.pgdata, 'PG_VERSION'))).mtimeMs
    const made = (await stat(join(template, 'PG_VERSION'))).mtimeMs
    assert.ok(Math.abs(copied - made) < 1, 'the data dir came from the template')
    assert.equal((await stat(a.pgdata)).mode & 0o777, 0o700, 'closed to others, as PostgreSQL requires')
    assert.notEqual(a.logId, b.logId, 'two databases made from one template are two logs')
  })
})
