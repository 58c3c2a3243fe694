import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { loadConfig } from '../src/config.ts'
import { startRuntime } from '../src/runtime.ts'
import { createTestDatabase } from './helpers/database.ts'

describe('startRuntime', () => {
  it("gives the audit log's sequencer the linger the environment sets", async (t) => {
    const db = await createTestDatabase()
    t.after(() => db.stop())
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-runtime-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    for (const [linger, expected] of [
      [undefined, 20],
      ['250', 250],
    ] as const) {
      const env = {
        DATABASE_URL: db.connectionString,
        ARBITER_DATA_DIR: dataDir,
        ARBITER_SEQUENCER_LINGER_MS: linger,
      }
      const runtime = await startRuntime(loadConfig(env), false, env)
      try {
        assert.equal(runtime.app.services.auditLog.sequencer.lingerMs, expected)
      } finally {
        await runtime.close()
      }
    }
  })
})
