import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { fillAuditLog } from '../../bench/audit-fill.ts'
import { CHUNK_SIZE } from '../../src/audit-log/core/verify-chunks.ts'
import { startEmbeddedPostgres } from '../../src/db/embedded.ts'
import { migrate } from '../../src/db/migrate.ts'
import { createPool } from '../../src/db/pool.ts'
import { runBuilt } from '../helpers/process.ts'

/**
 * `arbiter audit verify` on the embedded database checks a large log in chunks in its own thread, over
 * connections of its own (no worker threads): it must report what it always reported, a log that verifies and
 * the first bad seq of one that does not, whichever chunk the damage is in.
 */

const TOTAL = 2 * CHUNK_SIZE + 700

let dataDir: string
before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'arbiter-cli-verify-'))
  await withDataDir(async (connectionString) => {
    const pool = createPool({ connectionString, max: 1 })
    try {
      await migrate(pool)
    } finally {
      await pool.end()
    }
    await fillAuditLog(connectionString, TOTAL, { timeOriginMs: Date.UTC(2026, 0, 1) })
  })
})
after(() => rm(dataDir, { recursive: true, force: true }))

/** Opens the data dir's embedded database for `fn`, as the service would (the CLI needs it closed again). */
async function withDataDir(fn: (connectionString: string) => Promise<void>): Promise<void> {
  const database = await startEmbeddedPostgres({ dataDir, maintenanceIntervalMs: 0 })
  try {
    await fn(database.connectionString)
  } finally {
    await database.stop()
  }
}

async function auditVerify() {
  const run = await runBuilt('cli', ['audit', 'verify'], { ARBITER_DATA_DIR: dataDir })
  return { ...run, report: JSON.parse(run.stdout) as Record<string, unknown> }
}

describe('audit verify on the embedded database, a log of several chunks', () => {
  it('verifies every record, and names the first bad seq after damage in a middle chunk', async () => {
    const good = await auditVerify()
    assert.equal(good.code, 0, good.stderr)
    // The CLI's own signing key was registered, with its record, before it verified.
    const total = good.report.checked as number
    assert.ok(total >= TOTAL, `checked ${total}`)
    assert.equal(good.report.ok, true)
    assert.equal(good.report.tree_size, total)
    assert.equal(good.report.head_seq, total)
    assert.equal(good.report.first_bad_seq, null)

    const bad = CHUNK_SIZE + 17
    await withDataDir(async (connectionString) => {
      const client = new pg.Client({ connectionString })
      await client.connect()
      try {
        await client.query('ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_delete')
        // The stored text, its values unchanged: the database still holds the columns equal to its values.
        await client.query(
          `UPDATE audit_records SET canonical = replace(canonical, '"actor":', '"actor": ') WHERE seq = ${bad}`,
        )
        await client.query('ALTER TABLE audit_records ENABLE ALWAYS TRIGGER audit_records_no_update_delete')
      } finally {
        await client.end()
      }
    })
    const damaged = await auditVerify()
    assert.equal(damaged.code, 1, damaged.stderr)
    assert.equal(damaged.report.ok, false)
    assert.equal(damaged.report.first_bad_seq, bad)
    assert.equal(damaged.report.checked, bad - 1)
    assert.equal(damaged.report.head_seq, bad - 1)
    assert.match(damaged.stderr, new RegExp(`audit log does not verify at seq ${bad}\\n`))
  })
})
