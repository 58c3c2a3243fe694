import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { REPO_ROOT } from '../helpers/child-server.ts'
import { createTestDatabase } from '../helpers/database.ts'
import { startService } from '../helpers/process.ts'

/**
 * The README's walkthrough is examples/round-trip.sh; this runs it against the built service so the documented
 * steps keep working. The script's probe calls the service's own /healthz, a loopback address: the service
 * runs with ARBITER_PROBE_ALLOW_PRIVATE=true, as the script's comments tell a reader to.
 */
describe('examples/round-trip.sh', () => {
  it('runs the whole round trip against a live service', async (t) => {
    const db = await createTestDatabase({ migrate: false })
    t.after(() => db.stop())
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-round-trip-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    const adminKey = `admin_${randomBytes(24).toString('hex')}`
    const service = await startService({
      DATABASE_URL: db.connectionString,
      ARBITER_DATA_DIR: dataDir,
      ARBITER_BOOTSTRAP_ADMIN_KEY: adminKey,
      ARBITER_PROBE_ALLOW_PRIVATE: 'true',
    })
    t.after(() => service.stop('SIGKILL'))

    const child = spawn('bash', [join(REPO_ROOT, 'examples', 'round-trip.sh')], {
      cwd: tmpdir(), // the script finds its helpers and the CLI from its own path
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ADMIN_KEY: adminKey,
        ARBITER_URL: service.baseUrl,
      },
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
    // 'close': the output is all read once the pipes close, which may be after the process exits.
    const [code] = await once(child, 'close')
    assert.equal(code, 0, `the script failed:\n${stdout}\n${stderr}`)

    assert.match(stdout, /^probe \S+ dry run: result=success http_status=200$/m)
    assert.match(
      stdout,
      /^ {2}POST \/v1\/outcomes -> 201\n {2}POST \/v1\/outcomes -> 200$/m,
      'the second recorder gets 200',
    )
    const decided =
      /^manifest (\S+): verdict=GROUND_TRUTH_RESOLVES directive=PROCEED action_owner=orch-a$/m.exec(stdout)
    assert.ok(decided, stdout)
    assert.match(stdout, new RegExp(`^ok: manifest ${decided[1]} signed by \\S+$`, 'm'), 'verified offline')
    const halted = /^manifest (\S+): verdict=CRITERIA_DIFFER directive=HALT$/m.exec(stdout)
    assert.ok(halted, stdout)
    assert.match(stdout, /^escalation open for outcome \S+$/m)
    assert.match(
      stdout,
      new RegExp(
        `^resolution manifest \\S+: verdict=HUMAN_RESOLVED directive=PROCEED action_owner=orch-b supersedes=${halted[1]}$`,
        'm',
      ),
    )
    assert.match(stdout, /^audit log verifies: true$/m)
    assert.match(stdout, /round trip complete\n$/)

    // What the script printed is what the service holds.
    const manifest = await fetch(`${service.baseUrl}/v1/manifests/${decided[1]}`, {
      headers: { authorization: `Bearer ${adminKey}` },
    })
    assert.equal(manifest.status, 200)
    const envelope = (await manifest.json()) as { manifest: { verdict: string; interpretations: unknown } }
    assert.equal(envelope.manifest.verdict, 'GROUND_TRUTH_RESOLVES')
    const kinds = JSON.stringify(envelope.manifest.interpretations)
    assert.match(kinds, /"kind":"proceed"/)
    assert.match(kinds, /"kind":"compensate"/)
  })
})
