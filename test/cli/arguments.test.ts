import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { freePort } from '../helpers/child-server.ts'
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts'
import { mapBounded, runCli } from '../helpers/process.ts'

/**
 * The built CLI (`node dist/cli.js`, what `npm run arbiter` runs) with bad arguments: each mistake is one usage
 * line naming the flag, exit code 2, before anything reaches the database; and a failing database is described,
 * never quoted.
 */

/** What PostgreSQL says about values and objects; none of it may reach a CLI user. */
const DATABASE_TEXT =
  /invalid input syntax|for type (bigint|integer|uuid)|"NaN"|database ".*" does not exist|role ".*" does not exist|password authentication failed|no pg_hba\.conf entry|relation ".*"|violates|ERROR:/

let db: TestDatabase
let dataDir: string
let env: Record<string, string>

before(async () => {
  db = await createTestDatabase()
  dataDir = await mkdtemp(join(tmpdir(), 'arbiter-cli-args-'))
  env = { DATABASE_URL: db.connectionString, ARBITER_DATA_DIR: dataDir }
})
after(async () => {
  await db.stop()
  await rm(dataDir, { recursive: true, force: true })
})

const USAGE_ERRORS: Array<{ args: string[]; message: RegExp }> = [
  {
    args: ['audit', 'verify', '--from-seq', 'abc'],
    message: /^arbiter: --from-seq must be a plain decimal integer/,
  },
  {
    args: ['audit', 'verify', '--from-seq', '-5'],
    message: /^arbiter: --from-seq must be a plain decimal integer/,
  },
  {
    args: ['audit', 'verify', '--from-seq=-5'],
    message: /^arbiter: --from-seq must be a plain decimal integer/,
  },
  {
    args: ['audit', 'verify', '--from-seq', '0x10'],
    message: /^arbiter: --from-seq must be a plain decimal integer/,
  },
  {
    args: ['audit', 'verify', '--from-seq', '1e3'],
    message: /^arbiter: --from-seq must be a plain decimal integer/,
  },
  {
    args: ['audit', 'verify', '--from-seq', '0'],
    message: /^arbiter: --from-seq must be a plain decimal integer/,
  },
  {
    args: ['audit', 'verify', '--from-seq', ''],
    message: /^arbiter: --from-seq must be a plain decimal integer/,
  },
  {
    args: ['audit', 'verify', '--to-seq', '99999999999999999999'],
    message: /^arbiter: --to-seq must be a plain decimal integer/,
  },
  {
    args: ['audit', 'verify', '--to-seq', '2', '--from-seq', '5'],
    message: /^arbiter: --to-seq \(2\) is below --from-seq \(5\)/,
  },
  { args: ['audit', 'verify', '--from-seq'], message: /^arbiter: --from-seq needs a value\n$/ },
  {
    args: ['audit', 'verify', '--from-seq', '--to-seq', '3'],
    message: /^arbiter: --from-seq needs a value\n$/,
  },
  {
    args: ['audit', 'verify', '--from-seq', '1', '--from-seq', '2'],
    message: /--from-seq is given more than once/,
  },
  { args: ['audit', 'verify', '--frm-seq', '1'], message: /^arbiter: audit verify: unknown flag --frm-seq/ },
  { args: ['audit', 'verify', 'now'], message: /^arbiter: audit verify: unexpected argument "now"/ },
  { args: ['audit', 'export', '--out'], message: /^arbiter: --out needs a value\n$/ },
  {
    args: ['audit', 'export', '--out', join(tmpdir(), 'no-such-dir-x', 'a.ndjson')],
    message: /^arbiter: --out: cannot write .*ENOENT/,
  },
  { args: ['audit', 'export', '--since', '3'], message: /^arbiter: audit export: unknown flag --since/ },
  { args: ['audit', 'frobnicate'], message: /^arbiter: audit: unknown subcommand "frobnicate"/ },
  { args: ['audit'], message: /^arbiter: audit needs a subcommand/ },
  {
    args: ['keys', 'create'],
    message: /^arbiter: keys create needs --role orchestrator\|dashboard\|ops\|admin/,
  },
  { args: ['keys', 'create', '--role', 'root'], message: /^arbiter: keys create needs --role/ },
  { args: ['keys', 'create', '--role'], message: /^arbiter: --role needs a value\n$/ },
  {
    args: ['keys', 'create', '--role', 'admin', '--label', ' '],
    message: /^arbiter: --label must be 1 to 200 characters/,
  },
  {
    args: ['keys', 'create', '--role', 'orchestrator', '--orchestrator-id', 'x'.repeat(201)],
    message: /^arbiter: --orchestrator-id must be 1 to 200 characters/,
  },
  {
    args: ['keys', 'create', '--role', 'admin', '--admin'],
    message: /^arbiter: keys create: unknown flag --admin/,
  },
  { args: ['keys', 'list', '--all'], message: /^arbiter: keys list: unknown flag --all/ },
  { args: ['keys', 'revoke'], message: /^arbiter: keys revoke needs the id of the key/ },
  { args: ['keys', 'revoke', 'not-a-uuid'], message: /^arbiter: keys revoke: "not-a-uuid" is not a key id/ },
  { args: ['keys', 'revoke', "1' OR '1'='1"], message: /^arbiter: keys revoke: .* is not a key id/ },
  { args: ['keys', 'frobnicate'], message: /^arbiter: keys: unknown subcommand "frobnicate"/ },
  { args: ['migrate', '--force'], message: /^arbiter: migrate: unknown flag --force \(it takes no flags\)/ },
  { args: ['serve', 'now'], message: /^arbiter: serve: unexpected argument "now"/ },
  { args: ['signing-key'], message: /^arbiter: signing-key needs a subcommand: rotate/ },
  { args: ['signing-key', 'rotate', '--yes'], message: /^arbiter: signing-key rotate: unknown flag --yes/ },
  { args: ['frobnicate'], message: /^arbiter: unknown command "frobnicate"/ },
  { args: ['verify', 'manifest.json', '--jwks'], message: /^error: .*'--jwks <value>' argument missing/ },
  { args: ['verify', 'manifest.json', '--jwks', 'j.json', '--keys', 'k'], message: /^error: .*'--keys'/ },
  { args: ['verify', '--jwks', 'j.json'], message: /^error: expected exactly one file to verify/ },
]

describe('the arbiter CLI with bad arguments', () => {
  it('answers every mistake with one usage line naming the flag, exit 2, and no database text', async (t) => {
    const results = await mapBounded(USAGE_ERRORS, async (c) => ({ ...c, ...(await runCli(c.args, env)) }))
    for (const r of results) {
      const name = r.args.join(' ')
      assert.equal(r.code, 2, `${name}: exit ${r.code}\n${r.stderr}`)
      assert.match(r.stderr, r.message, name)
      assert.doesNotMatch(r.stderr, DATABASE_TEXT, name)
      assert.equal(r.stdout, '', `${name}: nothing on stdout`)
    }
    t.diagnostic(`${results.length} argument mistakes, each refused with exit 2`)
  })

  it('still runs what is well formed, plain decimal ranges included', async () => {
    const created = await runCli(['keys', 'create', '--role', 'ops', '--label', 'cli args test'], env)
    assert.equal(created.code, 0, created.stderr)
    const { id } = JSON.parse(created.stdout) as { id: string }
    const verify = await runCli(['audit', 'verify', '--from-seq', '1', '--to-seq', '1'], env)
    assert.equal(verify.code, 0, verify.stderr)
    assert.equal((JSON.parse(verify.stdout) as { ok: boolean }).ok, true)
    const revoked = await runCli(['keys', 'revoke', id], env)
    assert.equal(revoked.code, 0, revoked.stderr)
    assert.equal(revoked.stdout, `revoked ${id}\n`)
  })

  it('names an unknown key id without the database words', async () => {
    const missing = await runCli(['keys', 'revoke', '00000000-0000-4000-8000-000000000000'], env)
    assert.equal(missing.code, 1)
    assert.equal(missing.stderr, 'arbiter: no key 00000000-0000-4000-8000-000000000000\n')
  })

  it('describes a database it cannot use instead of quoting it', async (t) => {
    const cases = [
      {
        name: 'nothing listening',
        url: `postgres://postgres@127.0.0.1:${await freePort()}/test`,
        message: /^arbiter: cannot reach the database \(ECONNREFUSED\): check DATABASE_URL\n$/,
      },
    ]
    if (db.kind === 'postgres') {
      const url = new URL(db.connectionString)
      url.pathname = '/arbiter_no_such_database'
      cases.push({
        name: 'a database that does not exist',
        url: url.toString(),
        message: /^arbiter: the database named in DATABASE_URL does not exist \(SQLSTATE 3D000\)\n$/,
      })
    } else t.diagnostic('embedded database: the missing-database case needs a PostgreSQL server')
    for (const c of cases) {
      const result = await runCli(['audit', 'verify', '--from-seq', '1'], {
        DATABASE_URL: c.url,
        ARBITER_DATA_DIR: dataDir,
      })
      assert.equal(result.code, 1, `${c.name}: ${result.stderr}`)
      assert.match(result.stderr, c.message, c.name)
      assert.doesNotMatch(result.stderr, DATABASE_TEXT, c.name)
    }
  })
})
