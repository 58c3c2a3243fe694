import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { migrate, pendingMigrationCount, readMigrations } from '../../src/db/migrate.ts'
import { createPool } from '../../src/db/pool.ts'
import { createTestDatabase, testPoolMax } from '../helpers/database.ts'

describe('migrations', () => {
  it('apply once, even when several replicas migrate at the same time', async (t) => {
    const db = await createTestDatabase({ migrate: false })
    t.after(() => db.stop())
    const pools = [1, 2, 3].map(() =>
      createPool({ connectionString: db.connectionString, max: testPoolMax(db.kind) }),
    )
    t.after(() => Promise.all(pools.map((pool) => pool.end())))
    const migrations = await readMigrations()
    assert.equal(
      await pendingMigrationCount(pools[0]!, migrations).catch(() => -1),
      -1,
      'no table before the first run',
    )
    const applied = await Promise.all(pools.map((pool) => migrate(pool, migrations)))
    const all = applied.flat()
    assert.equal(all.length, migrations.length, 'each migration applied exactly once across replicas')
    assert.equal(await pendingMigrationCount(pools[0]!, migrations), 0)
    assert.deepEqual(await migrate(pools[1]!, migrations), [], 'a later start has nothing to do')
    const { rows } = await pools[0]!.query('SELECT version FROM schema_migrations ORDER BY version')
    assert.deepEqual(
      rows.map((row) => row.version),
      migrations.map((m) => m.version),
    )
  })

  it('reads numbered files in order', async () => {
    const migrations = await readMigrations()
    assert.ok(migrations.length >= 1)
    for (const [index, m] of migrations.entries()) assert.equal(m.version, index + 1)
  })
})
