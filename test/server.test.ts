import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { type AddressInfo, connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { createTestDatabase } from './helpers/database.ts'
import { runBuilt, runCli, startService } from './helpers/process.ts'

async function call(base: string, key: string | null, path: string, init: RequestInit = {}) {
  return fetch(`${base}${path}`, {
    ...init,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      'content-type': 'application/json',
      ...init.headers,
    },
  })
}

describe('the service process', () => {
  it('starts on the embedded database with no server, prints an admin key once, and keeps data across a restart', async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-start-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    const first = await startService({ ARBITER_DATA_DIR: dataDir })
    t.after(() => first.stop('SIGKILL'))
    // Printed once the service listens, so it may follow the "listening" line by a moment.
    const [, key] = await first.waitForStdout(/\b(arb_[A-Za-z0-9_-]{43})\b/)
    assert.ok(key, 'the generated admin key is printed on stdout')
    assert.equal((await call(first.baseUrl, null, '/readyz')).status, 200)
    const created = await call(first.baseUrl, key, '/v1/outcomes', {
      method: 'POST',
      body: JSON.stringify({ subagent_id: 's', run_id: 'r', evidence: [{ kind: 'exit_code', content: 0 }] }),
    })
    assert.equal(created.status, 201)
    const { outcome_id } = (await created.json()) as { outcome_id: string }
    assert.ok(
      !first
        .stdout()
        .split('\n')
        .some((line) => line.startsWith('{') && line.includes(key)),
      'never logged',
    )
    assert.equal(await first.stop(), 0, 'SIGTERM shuts down cleanly')
    assert.equal(((await stat(join(dataDir, 'signing-key.pem'))).mode & 0o777).toString(8), '600')

    const second = await startService({ ARBITER_DATA_DIR: dataDir })
    t.after(() => second.stop('SIGKILL'))
    assert.doesNotMatch(second.stdout(), /arb_[A-Za-z0-9_-]{43}/, 'no second key')
    const again = await call(second.baseUrl, key, `/v1/outcomes/${outcome_id}`)
    assert.equal(again.status, 200, 'the key and the outcome survived the restart')
    assert.equal(await second.stop(), 0)
  })

  it('uses DATABASE_URL and a bootstrap admin key; the CLI creates keys and verifies the audit log', async (t) => {
    const db = await createTestDatabase({ migrate: false })
    t.after(() => db.stop())
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-url-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    const bootstrap = `boot_${randomBytes(24).toString('hex')}`
    const env = {
      DATABASE_URL: db.connectionString,
      ARBITER_DATA_DIR: dataDir,
      ARBITER_BOOTSTRAP_ADMIN_KEY: bootstrap,
    }
    const service = await startService(env)
    t.after(() => service.stop('SIGKILL'))
    assert.doesNotMatch(service.stdout(), /arb_/, 'a bootstrapped key is never echoed')
    assert.equal((await call(service.baseUrl, bootstrap, '/v1/admin/keys')).status, 200)
    assert.equal(await service.stop(), 0)

    const created = await runCli(
      ['keys', 'create', '--role', 'orchestrator', '--orchestrator-id', 'orch-a'],
      env,
    )
    assert.equal(created.code, 0, created.stderr)
    const key = JSON.parse(created.stdout)
    assert.deepEqual(key.orchestrator_ids, ['orch-a'])
    const verify = await runCli(['audit', 'verify'], env)
    assert.equal(verify.code, 0, verify.stderr)
    assert.equal(JSON.parse(verify.stdout).ok, true)
    const exported = await runCli(['audit', 'export'], env)
    const kinds = exported.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).kind)
    assert.deepEqual(kinds, ['signing_key.added', 'key.created', 'key.created'])
    const migrate = await runCli(['migrate'], env)
    assert.match(migrate.stdout, /nothing to apply/)
  })

  it('prints and stores no admin key when it cannot listen; the next start prints one, once', async (t) => {
    const db = await createTestDatabase({ migrate: false })
    t.after(() => db.stop())
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-port-taken-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    const env = { DATABASE_URL: db.connectionString, ARBITER_DATA_DIR: dataDir }
    const squatter = createServer()
    squatter.listen(0, '127.0.0.1')
    await once(squatter, 'listening')
    const { port } = squatter.address() as AddressInfo

    const failed = await runBuilt('server', [], { ...env, HOST: '127.0.0.1', PORT: String(port) })
    squatter.close()
    assert.equal(failed.code, 1, failed.stderr)
    assert.match(
      failed.stderr,
      new RegExp(
        `arbiter: failed to start: cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use \\(set PORT`,
      ),
    )
    assert.doesNotMatch(failed.stdout + failed.stderr, /arb_|admin key/, 'no key is printed')
    const afterFailure = await runCli(['keys', 'list'], env)
    assert.equal(afterFailure.code, 0, afterFailure.stderr)
    assert.deepEqual(JSON.parse(afterFailure.stdout), [], 'no key is stored')

    const service = await startService(env)
    t.after(() => service.stop('SIGKILL'))
    const [, key] = await service.waitForStdout(/\b(arb_[A-Za-z0-9_-]{43})\b/)
    assert.equal((await call(service.baseUrl, key!, '/v1/admin/keys')).status, 200, 'the printed key works')
    assert.equal(await service.stop(), 0)
    assert.equal(service.stdout().split(key!).length - 1, 1, 'printed exactly once')
    const keys = JSON.parse((await runCli(['keys', 'list'], env)).stdout) as Array<{ role: string }>
    assert.deepEqual(
      keys.map((k) => k.role),
      ['admin'],
    )
  })

  it('describes a database it cannot start on, without quoting the database', async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-no-db-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    const squatter = createServer()
    squatter.listen(0, '127.0.0.1')
    await once(squatter, 'listening')
    const { port } = squatter.address() as AddressInfo
    squatter.close()
    await once(squatter, 'close')
    const cases = [
      {
        url: `postgres://postgres@127.0.0.1:${port}/test`,
        message: 'arbiter: failed to start: cannot reach the database (ECONNREFUSED): check DATABASE_URL\n',
      },
    ]
    if (process.env.TEST_DATABASE_URL) {
      const url = new URL(process.env.TEST_DATABASE_URL)
      url.pathname = '/arbiter_no_such_database'
      cases.push({
        url: url.toString(),
        message:
          'arbiter: failed to start: the database named in DATABASE_URL does not exist (SQLSTATE 3D000)\n',
      })
    }
    for (const c of cases) {
      const failed = await runBuilt('server', [], {
        DATABASE_URL: c.url,
        ARBITER_DATA_DIR: dataDir,
        PORT: '0',
      })
      assert.equal(failed.code, 1)
      assert.equal(failed.stderr, c.message)
      assert.doesNotMatch(failed.stdout, /arb_/)
    }
  })

  it('on SIGTERM, closes a connection still sending its body once the grace period is over, and exits', {
    timeout: 90_000,
  }, async (t) => {
    const db = await createTestDatabase({ migrate: false })
    t.after(() => db.stop())
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-grace-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    const bootstrap = `boot_${randomBytes(24).toString('hex')}`
    const service = await startService({
      DATABASE_URL: db.connectionString,
      ARBITER_DATA_DIR: dataDir,
      ARBITER_BOOTSTRAP_ADMIN_KEY: bootstrap,
      ARBITER_SHUTDOWN_GRACE_MS: '300',
    })
    t.after(() => service.stop('SIGKILL'))
    const { hostname, port } = new URL(service.baseUrl)
    // A client that sends its headers and one byte of a 100 kB body, then nothing: without a grace period the
    // shutdown would wait for it until the request timeout (30 s).
    const socket = connect(Number(port), hostname)
    await once(socket, 'connect')
    socket.write(
      `POST /v1/outcomes HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${bootstrap}\r\n` +
        'content-type: application/json\r\ncontent-length: 100000\r\n\r\n{',
    )
    socket.on('error', () => undefined)
    const closed = once(socket, 'close')
    await new Promise((resolve) => setTimeout(resolve, 200))
    assert.equal(await service.stop(), 0, 'a clean exit after the grace period')
    await closed
    assert.match(service.stdout(), /grace period over: closing the remaining connections/)
  })

  it('refuses a bad configuration with one line naming the variable', async () => {
    const result = await runCli(['keys', 'list'], { PORT: 'eighty' })
    assert.equal(result.code, 1)
    assert.equal(result.stderr.trim(), 'arbiter: invalid PORT: expected a port number')
  })
})
