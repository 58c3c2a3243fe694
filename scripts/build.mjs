#!/usr/bin/env node
// Builds Arbiter's JavaScript: the two workspace packages (packages/transparency, clients/typescript), then the
// service (src/ → dist/, the console's scripts in dist/console, and the embedded database's template).
//
//   node scripts/build.mjs              build everything (npm run build, npm ci's prepare)
//   node scripts/build.mjs --if-stale   build only what a source newer than its build asks for (npm start, npm test)
//   node scripts/build.mjs --packages   the workspace packages only (with --if-stale: npm run typecheck)
//
// It never rewrites a file a running process has loaded. The service's build goes to a new directory,
// .dist-build-<id> (beside src/, at the same depth as dist/ always was: the code finds migrations/, console/ and
// package.json one level up from its build), and `dist` is a symbolic link that is swapped to it in one rename(2): a process started
// before keeps running on the directory it resolved at start (Node follows the link once, for the entry point),
// lazy imports and worker threads included, and one started after gets the new build whole. The last few builds
// are kept, and any older one that a live process marked as its own (src/build-in-use.ts). A package's files are
// each written beside and renamed over the old one (a package is loaded whole at start, and `npm pack` needs a
// real directory).
//
// Plain JavaScript, so that it runs before anything is compiled.

import { spawnSync } from 'node:child_process'
import {
  cp,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises'
import { basename, dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
/** Build stamps and the build lock. */
const STATE = join(ROOT, '.dist-state')
const BUILD_PREFIX = '.dist-build-'
/**
 * Builds of the service kept besides the current one, whether or not a process still runs on them; a build marked
 * in use by a live process (MARKS) is kept whatever its age. ARBITER_BUILDS_KEPT overrides it (the build's test).
 */
const KEEP_PREVIOUS = Number.parseInt(process.env.ARBITER_BUILDS_KEPT ?? '3', 10)
/** The folder in a build where each process running on it leaves a file named by its pid (src/build-in-use.ts). */
const MARKS = '.in-use'

const ifStale = process.argv.includes('--if-stale')
const packagesOnly = process.argv.includes('--packages')

// `browser`: also bundle the package's portable build with its dependencies into dist/browser.js, one ES module a
// page can load without a bundler (the console does).
const PACKAGES = [
  { name: 'transparency', dir: 'packages/transparency', entry: 'dist/index.js', browser: true },
  { name: 'client', dir: 'clients/typescript', entry: 'dist/index.js' },
]

const APP_INPUTS = [
  'src',
  'console/src',
  'tsconfig.json',
  'tsconfig.build.json',
  'console/tsconfig.json',
  'package-lock.json',
  'scripts/build.mjs',
]

async function main() {
  await mkdir(STATE, { recursive: true })
  const unlock = await lock()
  try {
    let upstreamRebuilt = false
    for (const pkg of PACKAGES) {
      const inputs = [join(pkg.dir, 'src'), join(pkg.dir, 'tsconfig.json')]
      const stale = !ifStale || upstreamRebuilt || (await isStale(pkg.name, inputs, join(pkg.dir, pkg.entry)))
      if (stale) {
        await buildPackage(pkg)
        upstreamRebuilt = true
      }
    }
    if (packagesOnly) return
    if (!ifStale || upstreamRebuilt || (await isStale('app', APP_INPUTS, 'dist/server.js'))) await buildApp()
  } finally {
    await unlock()
  }
}

/** Each build's start time, by project, in .dist-state/<name>.stamp: a source changed after it is newer. */
function stampFile(name) {
  return join(STATE, `${name}.stamp`)
}

async function isStale(name, inputs, output) {
  let builtAt
  try {
    builtAt = (await stat(stampFile(name))).mtimeMs
    await stat(join(ROOT, output))
  } catch {
    return true
  }
  for (const input of inputs) if ((await newestChange(join(ROOT, input))) >= builtAt) return true
  return false
}

/** The newest modification time of a file, or of any file under a directory. */
async function newestChange(path) {
  let info
  try {
    info = await stat(path)
  } catch {
    return 0
  }
  if (!info.isDirectory()) return info.mtimeMs
  let newest = info.mtimeMs
  for (const entry of await readdir(path)) newest = Math.max(newest, await newestChange(join(path, entry)))
  return newest
}

async function stamp(name, startedAt) {
  const file = stampFile(name)
  await writeFile(file, `${new Date(startedAt).toISOString()}\n`)
  // The stamp's time is the build's start: a source saved while the compiler ran is newer, and rebuilt next time.
  await utimes(file, startedAt / 1000, startedAt / 1000)
}

function tsc(args) {
  const compiler = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
  const result = spawnSync(process.execPath, [compiler, ...args], { cwd: ROOT, stdio: 'inherit' })
  if (result.status !== 0) throw new Error(`tsc ${args.join(' ')} failed`)
}

async function buildPackage(pkg) {
  const startedAt = Date.now()
  const beside = join(ROOT, pkg.dir, `.dist-next-${process.pid}`)
  await rm(beside, { recursive: true, force: true })
  try {
    tsc(['-p', join(pkg.dir, 'tsconfig.json'), '--outDir', beside])
    if (pkg.browser) await bundleForBrowser(join(ROOT, pkg.dir), beside)
    await swapFiles(beside, join(ROOT, pkg.dir, 'dist'))
  } finally {
    await rm(beside, { recursive: true, force: true })
  }
  await stamp(pkg.name, startedAt)
}

async function bundleForBrowser(packageDir, outDir) {
  // Imported here: esbuild is a devDependency, and a build without browser packages never needs it.
  const { build } = await import('esbuild')
  await build({
    entryPoints: [join(outDir, 'index.js')],
    // Resolved from the package, so that its own dependencies are the ones bundled.
    absWorkingDir: packageDir,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    outfile: join(outDir, 'browser.js'),
    legalComments: 'inline',
    logLevel: 'warning',
  })
}

/** Moves every file of `from` over its counterpart in `to` (rename: atomic per file), then drops files `from` lacks. */
async function swapFiles(from, to) {
  const built = new Set(await listFiles(from))
  for (const file of built) {
    await mkdir(dirname(join(to, file)), { recursive: true })
    await rename(join(from, file), join(to, file))
  }
  for (const file of await listFiles(to)) if (!built.has(file)) await rm(join(to, file), { force: true })
}

async function listFiles(dir, prefix = '') {
  let entries
  try {
    entries = await readdir(join(dir, prefix), { withFileTypes: true })
  } catch {
    return []
  }
  const files = []
  for (const entry of entries) {
    const path = join(prefix, entry.name)
    if (entry.isDirectory()) files.push(...(await listFiles(dir, path)))
    else files.push(path)
  }
  return files
}

async function buildApp() {
  const startedAt = Date.now()
  const target = join(ROOT, `${BUILD_PREFIX}${startedAt.toString(36)}-${process.pid}`)
  const dist = join(ROOT, 'dist')
  const current = await currentBuild(dist)
  // With --if-stale, starting from a copy of the current build lets the compiler's incremental mode write only
  // what changed (its .tsbuildinfo names sources relative to itself: every build directory sits at the same depth),
  // and keeps the embedded database's template when PGlite is the same. A full build starts empty.
  if (ifStale && current?.startsWith(join(ROOT, BUILD_PREFIX)))
    await cp(current, target, { recursive: true, filter: (source) => basename(source) !== MARKS })
  else await mkdir(target, { recursive: true })
  try {
    tsc(['-p', 'tsconfig.build.json', '--outDir', target, '--tsBuildInfoFile', join(target, '.tsbuildinfo')])
    tsc(['-p', 'console/tsconfig.json', '--outDir', join(target, 'console')])
    const template = spawnSync(process.execPath, [join(target, 'embedded-template-build.js')], {
      cwd: ROOT,
      stdio: 'inherit',
    })
    if (template.status !== 0) throw new Error('making the embedded database template failed')
  } catch (err) {
    await rm(target, { recursive: true, force: true })
    throw err
  }
  await swapLink(dist, target)
  await stamp('app', startedAt)
  await pruneBuilds(target)
}

/** The directory `dist` stands for: its link's target, itself when it is a plain directory, or null. */
async function currentBuild(dist) {
  try {
    const info = await lstat(dist)
    if (info.isSymbolicLink()) return join(ROOT, await readlink(dist))
    return info.isDirectory() ? dist : null
  } catch {
    return null
  }
}

/** Points `link` at `target` in one rename(2). A plain directory there (an older layout) is moved aside first. */
async function swapLink(link, target) {
  const next = `${link}.next-${process.pid}`
  await rm(next, { force: true })
  await symlink(relative(dirname(link), target), next)
  try {
    const info = await lstat(link)
    if (!info.isSymbolicLink())
      await rename(link, join(ROOT, `${BUILD_PREFIX}plain-${Date.now().toString(36)}`))
  } catch {
    // nothing there yet
  }
  await rename(next, link)
}

/** Removes the service's builds older than the last KEEP_PREVIOUS before `current`. */
async function pruneBuilds(current) {
  const builds = []
  for (const name of await readdir(ROOT)) {
    if (!name.startsWith(BUILD_PREFIX) || join(ROOT, name) === current) continue
    builds.push({ name, at: (await stat(join(ROOT, name))).mtimeMs })
  }
  builds.sort((a, b) => b.at - a.at)
  for (const old of builds.slice(KEEP_PREVIOUS)) {
    if (await inUse(join(ROOT, old.name))) continue
    await rm(join(ROOT, old.name), { recursive: true, force: true })
  }
}

/** Whether a live process marked the build as the one it runs on (a mark of a process gone is ignored). */
async function inUse(build) {
  const marks = await readdir(join(build, MARKS)).catch(() => [])
  return marks.some((name) => {
    const pid = Number.parseInt(name, 10)
    return Number.isInteger(pid) && isAlive(pid)
  })
}

/** One build at a time: a second one waits, then finds the first one's work done (with --if-stale). */
async function lock() {
  const file = join(STATE, 'lock')
  for (;;) {
    try {
      await writeFile(file, String(process.pid), { flag: 'wx' })
      return () => rm(file, { force: true })
    } catch (err) {
      if (err.code !== 'EEXIST') throw err
      const holder = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10)
      if (!Number.isInteger(holder) || !isAlive(holder)) {
        await rm(file, { force: true })
        continue
      }
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
}

function isAlive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}

await main()
