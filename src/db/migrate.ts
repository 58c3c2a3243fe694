import { readdir, readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Pool } from './pool.ts'
import { withTransaction } from './pool.ts'

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'migrations')

// Arbitrary constant naming "schema migrations" in pg_advisory_xact_lock; every replica uses the same one.
const MIGRATION_LOCK_KEY = 7_246_153_001

export interface Migration {
  version: number
  name: string
  sql: string
}

/** Reads `NNN_name.sql` files in version order; a gap or a duplicate version is a packaging error. */
export async function readMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.sql')).sort()
  const migrations: Migration[] = []
  for (const file of files) {
    const match = /^(\d+)_([\w-]+)\.sql$/.exec(file)
    if (!match) throw new Error(`migration file ${file} is not named NNN_name.sql`)
    const version = Number(match[1])
    if (version !== migrations.length + 1) throw new Error(`migration ${file} is out of sequence`)
    migrations.push({ version, name: match[2]!, sql: await readFile(join(dir, file), 'utf8') })
  }
  return migrations
}

/**
 * Applies every pending migration, forward only, in one transaction under an advisory lock: replicas starting
 * together queue on the lock, and the ones that come second find nothing left to do.
 */
export async function migrate(pool: Pool, migrations?: Migration[]): Promise<string[]> {
  const all = migrations ?? (await readMigrations())
  return withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK_KEY])
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`)
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations')
    const done = new Set(rows.map((row) => row.version))
    const applied: string[] = []
    for (const migration of all) {
      if (done.has(migration.version)) continue
      await client.query(migration.sql)
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ])
      applied.push(`${String(migration.version).padStart(3, '0')}_${migration.name}`)
    }
    return applied
  })
}

/** Number of known migrations not yet applied (0 means the schema is current). */
export async function pendingMigrationCount(pool: Pool, migrations: Migration[]): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM schema_migrations WHERE version = ANY($1::int[])`,
    [migrations.map((m) => m.version)],
  )
  return migrations.length - (rows[0]?.n ?? 0)
}
