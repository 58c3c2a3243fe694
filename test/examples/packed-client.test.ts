import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { REPO_ROOT } from '../helpers/child-server.ts'
import { listenTestApp } from '../helpers/listening-app.ts'

/*
 * @arbiter/client as a consumer outside this repository gets it: `npm pack` of the client and of
 * @arbiter/transparency (run `npm run build` first), installed with npm into an empty folder under the system's
 * temporary directory (no node_modules above it), compiled there by a strict NodeNext tsc, and run. The consumer is
 * examples/typescript, a plain orchestrator; its published dependencies (jose, canonicalize, openapi-fetch,
 * typescript, @types/node) come from the npm registry (or npm's cache).
 */

const run = promisify(execFile)

/** How this machine reaches the registry, if its environment says so (npm's own config files are under HOME). */
const NETWORK_ENV =
  /^(https?_proxy|no_proxy|node_extra_ca_certs|npm_config_(registry|cafile|https?_proxy|noproxy))$/i

/**
 * npm and node with PATH, HOME and the network settings above only: nothing else of an outer `npm test`
 * (its npm_config_* name this repository as the project).
 */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const network = Object.entries(process.env).filter(([name]) => NETWORK_ENV.test(name))
  return {
    ...Object.fromEntries(network),
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    ...extra,
  }
}

async function sh(cwd: string, file: string, args: string[], env = cleanEnv()) {
  try {
    return await run(file, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 })
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string }
    throw new Error(`${file} ${args.join(' ')} failed in ${cwd}:\n${stdout ?? ''}\n${stderr ?? ''}`)
  }
}

const work = await mkdtemp(join(tmpdir(), 'arbiter-packed-client-'))
after(() => rm(work, { recursive: true, force: true }))

/** The client has one build; the transparency package a Node one (node:crypto), a portable one and its bundle. */
const EXPORTS: Record<string, unknown> = {
  'arbiter-client-0.1.0.tgz': { '.': { types: './dist/index.d.ts', default: './dist/index.js' } },
  'arbiter-transparency-0.1.0.tgz': {
    '.': { types: './dist/index.d.ts', node: './dist/node.js', default: './dist/index.js' },
    './browser.js': './dist/browser.js',
  },
}

function exportTargets(exports: unknown): string[] {
  if (typeof exports === 'string') return [exports]
  return Object.values(exports as Record<string, unknown>).flatMap(exportTargets)
}

describe('the packed TypeScript client in a folder outside the repository', () => {
  let tarballs: string[] = []
  const app = join(work, 'app')

  it('packs compiled JavaScript and declarations, with exports that name them', async () => {
    await sh(REPO_ROOT, 'npm', [
      'pack',
      '--silent',
      '--pack-destination',
      work,
      '--workspace',
      'packages/transparency',
      '--workspace',
      'clients/typescript',
    ])
    tarballs = (await readdir(work)).filter((name) => name.endsWith('.tgz')).sort()
    assert.deepEqual(tarballs, ['arbiter-client-0.1.0.tgz', 'arbiter-transparency-0.1.0.tgz'])

    for (const tarball of tarballs) {
      const listing = (await sh(work, 'tar', ['-tzf', tarball])).stdout.trim().split('\n')
      const sources = listing.filter((path) => path.endsWith('.ts') && !path.endsWith('.d.ts'))
      assert.deepEqual(sources, [], `${tarball} ships no TypeScript sources`)
      assert.ok(listing.includes('package/dist/index.js'), `${tarball}: ${listing.join(', ')}`)
      assert.ok(listing.includes('package/dist/index.d.ts'), `${tarball}: ${listing.join(', ')}`)
      assert.ok(listing.includes('package/README.md'), `${tarball} has its README`)
      const manifest = JSON.parse((await sh(work, 'tar', ['-xzOf', tarball, 'package/package.json'])).stdout)
      assert.deepEqual(manifest.exports, EXPORTS[tarball])
      for (const target of exportTargets(manifest.exports)) {
        assert.ok(listing.includes(`package/${target.slice(2)}`), `${tarball} ships ${target}`)
      }
      assert.equal(manifest.types, './dist/index.d.ts')
    }
  })

  it('installs with npm, compiles under tsc --strict --module nodenext, and settles a round trip', async () => {
    assert.equal(tarballs.length, 2, 'the packing test ran first')
    const example = join(REPO_ROOT, 'examples', 'typescript')
    await cp(join(example, 'src'), join(app, 'src'), { recursive: true })
    await writeFile(join(app, 'package.json'), await readFile(join(example, 'package.json')))
    await sh(app, 'npm', [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      '--loglevel=error',
      ...tarballs.map((tarball) => join(work, tarball)),
    ])

    // The same flags the issue names, no tsconfig: a consumer's strictest plain setup, declarations checked too.
    await sh(app, join(app, 'node_modules', '.bin', 'tsc'), [
      '--strict',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--outDir',
      'dist',
      'src/round-trip.ts',
    ])

    const arbiter = await listenTestApp({ after })
    const env = cleanEnv({
      ARBITER_URL: arbiter.baseUrl,
      ORCH_A_KEY: await arbiter.key('orchestrator', ['orch-a']),
      ORCH_B_KEY: await arbiter.key('orchestrator', ['orch-b']),
      RUN_ID: 'packed-client-1',
    })
    const { stdout } = await sh(app, process.execPath, ['dist/round-trip.js'], env)
    const summary = JSON.parse(stdout)
    assert.equal(summary.verdict, 'POLICY_RESOLVES')
    assert.equal(summary.directive, 'PROCEED')
    assert.equal(summary.resolved_outcome, 'failure', 'strictest_wins: failure over success')
    assert.equal(summary.action_owner, 'orch-b')
    assert.deepEqual(summary.actions, { 'orch-a': 'none', 'orch-b': 'compensate' }, 'compensated once')

    const stored = await arbiter.request(arbiter.adminKey, {
      method: 'GET',
      url: `/v1/manifests/${summary.manifest_id}`,
    })
    assert.equal(stored.statusCode, 200)
    assert.equal(stored.json().manifest.action_owner, 'orch-b')
  })
})
