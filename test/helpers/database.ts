import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { EMBEDDED_POOL_MAX, startEmbeddedPostgres } from '../../src/db/embedded.ts'
import { migrate } from '../../src/db/migrate.ts'
import { createPool } from '../../src/db/pool.ts'

export interface TestDatabase {
  connectionString: string
  /** 'postgres' when TEST_DATABASE_URL names a real server, 'embedded' for PGlite. */
  kind: 'postgres' | 'embedded'
  stop(): Promise<void>
}

/**
 * A freshly migrated database of this test file's own: a new database on the real server named by
 * TEST_DATABASE_URL (created and dropped here), or an in-memory embedded PGlite when it is unset.
 */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL
  let database: TestDatabase
  if (serverUrl) {
    const name = `arbiter_test_${process.pid}_${randomBytes(4).toString('hex')}`
    const admin = new pg.Client({ connectionString: serverUrl })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${name}`)
    await admin.end()
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    database = {
      connectionString: url.toString(),
      kind: 'postgres',
      async stop() {
        const dropper = new pg.Client({ connectionString: serverUrl })
        await dropper.connect()
        await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        await dropper.end()
      },
    }
  } else {
    const embedded = await startEmbeddedPostgres()
    database = { connectionString: embedded.connectionString, kind: 'embedded', stop: () => embedded.stop() }
  }
  if (options.migrate !== false) {
    const pool = createPool({ connectionString: database.connectionString, max: 1 })
    try {
      await migrate(pool)
    } finally {
      await pool.end()
    }
  }
  return database
}

/** Pool size the app gets in tests: like production (a small pool on the embedded database). */
export function testPoolMax(kind: TestDatabase['kind']): number {
  return kind === 'embedded' ? EMBEDDED_POOL_MAX : 10
}
