import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import {
  appendFile,
  cp,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

/**
 * scripts/build.mjs (npm run build; npm start and npm test with --if-stale) on a copy of the repository's sources:
 * it builds only when a source is newer than the build, and never rewrites a file of a build a process may have
 * loaded: the new build goes beside it and `dist` is swapped to it.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

let repo: string

function build(...args: string[]): { code: number | null; output: string; ms: number } {
  return buildWith({}, ...args)
}

function buildWith(
  env: NodeJS.ProcessEnv,
  ...args: string[]
): { code: number | null; output: string; ms: number } {
  const started = performance.now()
  const result = spawnSync(process.execPath, [join(repo, 'scripts', 'build.mjs'), ...args], {
    cwd: repo,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  })
  return { code: result.status, output: `${result.stdout}${result.stderr}`, ms: performance.now() - started }
}

/** Every file of a build directory with what tells a rewrite: inode, size and modification time. */
async function fingerprint(directory: string): Promise<Map<string, string>> {
  const files = new Map<string, string>()
  for (const name of await readdir(directory, { recursive: true })) {
    const info = await stat(join(directory, name))
    if (info.isFile()) files.set(name, `${info.ino}:${info.size}:${info.mtimeMs}`)
  }
  return files
}

async function distTarget(): Promise<string> {
  assert.ok((await lstat(join(repo, 'dist'))).isSymbolicLink(), 'dist is a link to the current build')
  return join(repo, await readlink(join(repo, 'dist')))
}

before(async () => {
  repo = await mkdtemp(join(tmpdir(), 'arbiter-build-'))
  for (const path of [
    'scripts',
    'src',
    'console',
    'packages/transparency/src',
    'packages/transparency/tsconfig.json',
    'packages/transparency/package.json',
    'clients/typescript/src',
    'clients/typescript/tsconfig.json',
    'clients/typescript/package.json',
    'tsconfig.json',
    'tsconfig.build.json',
    'package.json',
    'package-lock.json',
  ])
    await cp(join(ROOT, path), join(repo, path), { recursive: true })
  await symlink(join(ROOT, 'node_modules'), join(repo, 'node_modules'))
})
after(() => rm(repo, { recursive: true, force: true }))

describe('the build (scripts/build.mjs)', () => {
  it('builds beside and swaps; builds again only for a newer source, leaving the build in use untouched', async () => {
    const first = build()
    assert.equal(first.code, 0, first.output)
    const firstBuild = await distTarget()
    assert.ok((await stat(join(repo, 'dist', 'server.js'))).isFile())
    assert.ok(
      (await stat(join(repo, 'dist', 'console'))).isDirectory(),
      'the console scripts are in the build',
    )
    assert.ok((await stat(join(repo, 'dist', 'embedded-pgdata', 'PG_VERSION'))).isFile(), 'with the template')
    assert.ok((await stat(join(repo, 'packages', 'transparency', 'dist', 'index.js'))).isFile())
    const before = await fingerprint(firstBuild)

    // Nothing changed: nothing is built, and the answer is quick.
    const idle = build('--if-stale')
    assert.equal(idle.code, 0, idle.output)
    assert.equal(await distTarget(), firstBuild)
    assert.ok(idle.ms < 2_000, `--if-stale with nothing to do took ${Math.round(idle.ms)} ms`)

    // A source changes: a new build directory, and the one a running process may have loaded is as it was.
    await appendFile(join(repo, 'src', 'pagination.ts'), '\nexport const BUILD_TEST_MARKER = 1\n')
    const again = build('--if-stale')
    assert.equal(again.code, 0, again.output)
    const secondBuild = await distTarget()
    assert.notEqual(secondBuild, firstBuild)
    assert.match(await readFile(join(secondBuild, 'pagination.js'), 'utf8'), /BUILD_TEST_MARKER/)
    assert.deepEqual(await fingerprint(firstBuild), before, 'no file of the previous build was rewritten')
    assert.doesNotMatch(await readFile(join(firstBuild, 'pagination.js'), 'utf8'), /BUILD_TEST_MARKER/)

    // Old builds are pruned, except one a live process runs on (this test's process marks the first build as a
    // service does at start); a mark left by a process gone keeps nothing.
    await mkdir(join(firstBuild, '.in-use'), { recursive: true })
    await writeFile(join(firstBuild, '.in-use', String(process.pid)), '')
    const abandoned = join(repo, '.dist-build-abandoned')
    await mkdir(join(abandoned, '.in-use'), { recursive: true })
    await writeFile(join(abandoned, '.in-use', String(deadPid())), '')
    await appendFile(join(repo, 'src', 'pagination.ts'), '\nexport const BUILD_TEST_MARKER_2 = 2\n')
    const third = buildWith({ ARBITER_BUILDS_KEPT: '0' }, '--if-stale')
    assert.equal(third.code, 0, third.output)
    const thirdBuild = await distTarget()
    assert.ok(await exists(firstBuild), 'the build a live process runs on is kept')
    const kept = await fingerprint(firstBuild)
    kept.delete(join('.in-use', String(process.pid)))
    assert.deepEqual(kept, before)
    assert.ok(!(await exists(abandoned)), 'a build marked only by a process gone is pruned')
    assert.ok(!(await exists(secondBuild)), 'an unmarked old build is pruned')
    assert.ok(!(await exists(join(thirdBuild, '.in-use'))), 'marks are not copied into a new build')
  })
})

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  )
}

/** A pid no process has: one of a child that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', ''])
  return child.pid ?? 2 ** 22 + 1
}
