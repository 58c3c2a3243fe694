import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { freePort, REPO_ROOT } from '../helpers/child-server.ts'
import { createTestDatabase } from '../helpers/database.ts'
import { builtEntry } from '../helpers/process.ts'
import { readmeShellBlocks } from './readme-blocks.ts'

/**
 * The README is a walkthrough a reader pastes into one terminal, block after block. This runs exactly that: every
 * shell block of README.md, in order, in one bash (with `set -euo pipefail`, so an undefined variable or a
 * refused request stops it), from the repository's root. The README's blocks start Arbiter themselves (the built
 * server, in the background) and stop it at the end.
 *
 * What the test sets around them, and why:
 * - `DATABASE_URL`: this test file's own database (real PostgreSQL or embedded, as every test), inherited by the
 *   server and the `npm run arbiter` commands of the blocks, so the walkthrough runs on both.
 * - `PORT`: a free port (the blocks' `ARBITER_URL` follows it), so the test never collides with another server.
 * - `npm_config_ignore_scripts=true`: npm runs the `arbiter` script itself but no `pre` script a later change might
 *   add; the test run has built already (`npm test` builds first).
 */
describe('README.md', () => {
  it('marks every block it does not run, with a reason', async () => {
    const blocks = readmeShellBlocks(await readFile(join(REPO_ROOT, 'README.md'), 'utf8'))
    assert.ok(blocks.run.length >= 8, `only ${blocks.run.length} runnable blocks`)
    for (const skipped of blocks.skipped) assert.ok(skipped.reason.trim().length > 0, `line ${skipped.line}`)
    assert.equal(blocks.skipped.length, 1, 'every block but the quick start runs')
    assert.match(
      blocks.skipped[0]?.text ?? '',
      /npm ci && npm start/,
      'the quick start is the one skipped block',
    )
  })

  it('stays short: under 600 lines, and no history of benchmark runs', async () => {
    const readme = await readFile(join(REPO_ROOT, 'README.md'), 'utf8')
    const lines = readme.split('\n').length
    assert.ok(lines < 600, `README.md has ${lines} lines; run history and details belong in bench/ and docs/`)
    assert.deepEqual(runHistory(readme), [], 'dated runs belong in bench/README.md')
  })

  it('runs every shell block, in order, in one shell, against the service the blocks start', async (t) => {
    builtEntry('server')
    const db = await createTestDatabase({ migrate: false })
    t.after(() => db.stop())
    const dir = await mkdtemp(join(tmpdir(), 'arbiter-readme-'))
    t.after(() => rm(dir, { recursive: true, force: true }))
    const { run } = readmeShellBlocks(await readFile(join(REPO_ROOT, 'README.md'), 'utf8'))
    const script = [
      'set -euo pipefail',
      ...run.map((block) => `echo '## README line ${block.line}'\n${block.text}`),
      "echo '## README done'",
    ].join('\n')
    await writeFile(join(dir, 'readme.sh'), script)
    const port = await freePort()

    const env: Record<string, string> = {}
    for (const [name, value] of Object.entries(process.env)) {
      // The npm that may be running this test passes its own settings down; the walkthrough's npm starts clean.
      if (value !== undefined && !name.startsWith('npm_')) env[name] = value
    }
    const child = spawn('bash', [join(dir, 'readme.sh')], {
      cwd: REPO_ROOT,
      env: {
        ...env,
        DATABASE_URL: db.connectionString,
        PORT: String(port),
        npm_config_ignore_scripts: 'true',
        npm_config_update_notifier: 'false',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: whatever the blocks left running is stopped with it
    })
    t.after(() => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL')
      } catch {
        // Already gone: the blocks stopped their Arbiter themselves.
      }
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
    const lastBlock = [...stdout.matchAll(/^## README line (\d+)$/gm)].at(-1)?.[1]
    assert.equal(
      code,
      0,
      `the README's block at line ${lastBlock} failed:\n${stdout.slice(-6000)}\n${stderr}`,
    )
    assert.match(stdout, /^## README done$/m)

    // What the walkthrough says it shows, it shows.
    assert.match(stdout, /"verdict":"GROUND_TRUTH_RESOLVES"/, 'the probe settles the first outcome')
    assert.match(stdout, /^ok: manifest \S+ signed by \S+$/m, 'the manifest verifies offline')
    assert.match(stdout, /^CRITERIA_DIFFER\nHALT$/m, 'the second outcome halts')
    assert.match(stdout, /"verdict":"HUMAN_RESOLVED"/, 'ops resolve it')
    assert.match(stdout, /^CONTESTED\nHALT\nqualifier_difference$/m, 'the fan-out is contested')
    assert.match(stdout, /^DONE_WITH_CONCERNS\nAPPLY\n.*no test for the retry path/m, 'the review applies')
    assert.match(stdout, /"ok":true/, 'the log verifies')
    // The service the blocks started is stopped by them.
    await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`))
  })
})

/** A commit: 7 to 40 lowercase hex digits, a digit and a letter among them. */
const COMMIT = /\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b/g
const DATE = /\b20\d\d-\d\d-\d\d\b/g
const RUN_WORDS = /\b(runs?|bench|measured|phases?)\b/i

/**
 * The paragraphs of the README's prose (fenced blocks left out) that tell of benchmark runs: any naming a commit,
 * or a date beside words of runs (a date in an example is fine). One is allowed: the performance table's header,
 * naming the latest whole run by one commit and one date.
 */
function runHistory(markdown: string): string[] {
  const count = (text: string, pattern: RegExp) => (text.match(pattern) ?? []).length
  const told = markdown
    .replace(/^```[^\n]*\n[\s\S]*?^```\s*$/gm, '')
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.trim())
    .filter((p) => count(p, COMMIT) > 0 || (count(p, DATE) > 0 && RUN_WORDS.test(p)))
  const latest = told.findIndex(
    (p) => /latest whole run/i.test(p) && count(p, COMMIT) <= 1 && count(p, DATE) <= 1,
  )
  return told.filter((_, i) => i !== latest)
}
