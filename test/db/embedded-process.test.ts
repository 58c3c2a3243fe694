import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { startService } from '../helpers/process.ts'

/** The service's child running the embedded database (the built `embedded-process.js`). */
function databaseProcess(servicePid: number): number {
  const children = readFileSync(`/proc/${servicePid}/task/${servicePid}/children`, 'utf8')
    .split(' ')
    .filter(Boolean)
    .map(Number)
  const found = children.filter((pid) =>
    readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('embedded-process'),
  )
  assert.equal(found.length, 1, `the service's children: ${children.join(', ')}`)
  return found[0]!
}

/** Whether a process runs: a zombie (exited, not yet reaped by whoever adopted it) does not. */
function running(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z'
  } catch {
    return false
  }
}

async function gone(pid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs
  while (running(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
  return !running(pid)
}

describe('the embedded database’s process, supervised by the service', () => {
  const adminKey = randomBytes(30).toString('base64url')
  const outcome = JSON.stringify({
    subagent_id: 's',
    run_id: 'r',
    evidence: [{ kind: 'exit_code', content: 0 }],
  })
  const headers = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }

  it('exits within seconds when the service is killed with SIGKILL, and the next start opens the data dir', async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-orphan-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    const env = { ARBITER_DATA_DIR: dataDir, ARBITER_BOOTSTRAP_ADMIN_KEY: adminKey }
    const service = await startService(env)
    t.after(() => service.stop('SIGKILL'))
    const database = databaseProcess(service.child.pid!)
    // Both hold the directory: a start while the database's process still closes it is refused.
    const holders = (await readFile(join(dataDir, 'embedded.pid'), 'utf8')).trim().split('\n').map(Number)
    assert.deepEqual(holders, [service.child.pid, database])
    const created = await fetch(`${service.baseUrl}/v1/outcomes`, { method: 'POST', headers, body: outcome })
    assert.equal(created.status, 201)
    const { outcome_id } = (await created.json()) as { outcome_id: string }

    assert.equal(await service.stop('SIGKILL'), null)
    assert.ok(await gone(database, 5_000), 'the database’s process outlived the service by 5 s')

    const again = await startService(env)
    t.after(() => again.stop('SIGKILL'))
    const read = await fetch(`${again.baseUrl}/v1/outcomes/${outcome_id}`, { headers })
    assert.equal(read.status, 200, 'the outcome survived')
    assert.equal(await again.stop(), 0)
  })

  it('takes the service down, saying why, when it dies', async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-database-dies-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    const service = await startService({ ARBITER_DATA_DIR: dataDir, ARBITER_BOOTSTRAP_ADMIN_KEY: adminKey })
    t.after(() => service.stop('SIGKILL'))
    const exited = once(service.child, 'exit')
    process.kill(databaseProcess(service.child.pid!), 'SIGKILL')
    const [code] = await exited
    assert.equal(code, 1, service.stderr())
    assert.match(service.stderr(), /embedded database process exited unexpectedly \(signal SIGKILL\)/)
  })

  it('outlives a Ctrl-C that reaches the whole process group: the service shuts down and stops it cleanly', async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-ctrl-c-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    const service = await startService({ ARBITER_DATA_DIR: dataDir, ARBITER_BOOTSTRAP_ADMIN_KEY: adminKey })
    t.after(() => service.stop('SIGKILL'))
    const database = databaseProcess(service.child.pid!)
    const exited = once(service.child, 'exit')
    // The database's process first, a moment ahead: it must not die of it, whatever the order they come in.
    process.kill(database, 'SIGINT')
    await new Promise((resolve) => setTimeout(resolve, 1000))
    assert.ok(running(database), 'the database’s process died of SIGINT')
    assert.equal((await fetch(`${service.baseUrl}/readyz`)).status, 200)
    process.kill(service.child.pid!, 'SIGINT')
    const [code] = await exited
    assert.equal(code, 0, service.stderr())
    assert.doesNotMatch(service.stderr(), /exited unexpectedly/)
    assert.ok(await gone(database, 5_000))
  })
})
