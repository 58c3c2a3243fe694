import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts'
import { builtEntry, mapBounded } from '../helpers/process.ts'

/**
 * The built CLI pointed at a place that holds no Arbiter database: a command that reads (or changes) what a
 * database holds says so and exits 2; it never creates a database, nor a signing key, to report on.
 */

const READ_COMMANDS = [
  ['audit', 'verify'],
  ['audit', 'export'],
  ['keys', 'list'],
  ['keys', 'revoke', '00000000-0000-4000-8000-000000000000'],
  ['signing-key', 'rotate'],
]

/** `node dist/cli.js …` in `cwd`, with only `env` besides PATH and HOME. */
async function cli(args: string[], env: Record<string, string>, cwd: string) {
  const child = spawn(process.execPath, [builtEntry('cli'), ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const [code] = await once(child, 'close')
  return { code: code as number | null, stdout, stderr }
}

let parent: string
before(async () => {
  parent = await mkdtemp(join(tmpdir(), 'arbiter-no-database-'))
})
after(() => rm(parent, { recursive: true, force: true }))

describe('CLI commands on a data dir without an Arbiter database', () => {
  it('exit 2 naming the directory, and leave it as they found it (the default ./.arbiter too)', async () => {
    const empty = join(parent, 'empty')
    await mkdir(empty)
    const results = await mapBounded(READ_COMMANDS, async (args) => ({
      args,
      named: await cli(args, { ARBITER_DATA_DIR: join(parent, 'nothing-here') }, parent),
      byDefault: await cli(args, {}, empty),
    }))
    for (const { args, named, byDefault } of results) {
      const name = args.join(' ')
      assert.equal(named.code, 2, `${name}: ${named.stderr}`)
      assert.match(named.stderr, /^arbiter: no Arbiter database in .*\/nothing-here\b/, name)
      assert.equal(named.stdout, '', name)
      assert.equal(byDefault.code, 2, `${name}: ${byDefault.stderr}`)
      assert.match(byDefault.stderr, /^arbiter: no Arbiter database in .*\/empty\/\.arbiter\b/, name)
    }
    assert.equal(existsSync(join(parent, 'nothing-here')), false, 'no data dir was created')
    assert.deepEqual(await readdir(empty), [], 'nothing was created in the working directory')
  })

  describe('with DATABASE_URL', () => {
    let db: TestDatabase
    before(async () => {
      db = await createTestDatabase({ migrate: false })
    })
    after(() => db.stop())

    it('exit 2 on a database Arbiter never set up, and leave it empty', async () => {
      const dataDir = join(parent, 'server-data')
      const results = await mapBounded(READ_COMMANDS, (args) =>
        cli(args, { DATABASE_URL: db.connectionString, ARBITER_DATA_DIR: dataDir }, parent),
      )
      for (const [index, result] of results.entries()) {
        const name = READ_COMMANDS[index]!.join(' ')
        assert.equal(result.code, 2, `${name}: ${result.stderr}`)
        assert.match(result.stderr, /^arbiter: no Arbiter database at DATABASE_URL/, name)
      }
      assert.equal(existsSync(dataDir), false, 'no data dir (nor signing key) was created')
      const client = new pg.Client({ connectionString: db.connectionString })
      await client.connect()
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`,
      )
      await client.end()
      assert.deepEqual(rows, [{ n: 0 }], 'no table was created')
    })
  })
})
