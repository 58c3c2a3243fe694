import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { Worker } from 'node:worker_threads'
import { WORKER_HEAP } from '../worker-heap.ts'
import type { MaintenanceRun } from './embedded-maintenance.ts'
import { copyEmbeddedTemplate } from './embedded-template.ts'
import type { WireAddress, WireListen } from './pglite-wire-server.ts'

/**
 * Connections the app's pool should hold on the embedded database. It runs one transaction at a time whatever
 * the pool, but with a second connection the next request's statements are already waiting in the database's
 * thread when a transaction ends, instead of a round trip behind it; more connections do no better (measured
 * with bench/embedded-load.ts: bench/README.md, "Figures behind the code").
 */
export const EMBEDDED_POOL_MAX = 2

export interface EmbeddedPostgres {
  /**
   * A `postgres://` URL the app's `pg` pool connects to: the app has one data path either way. It holds the
   * password made for this start: keep it in memory, never write it down.
   */
  connectionString: string
  /** Where the database listens: the Unix socket in the data dir, or a loopback TCP port (in-memory databases). */
  address: WireAddress
  /** The thread PGlite runs on (for diagnostics and tests; `stop()` ends it). */
  worker: Worker
  stop(): Promise<void>
}

export interface EmbeddedOptions {
  /** Directory holding the database files; undefined keeps everything in memory (tests). */
  dataDir?: string
  /**
   * Socket connections the server accepts. PGlite is one session: connections take turns unit by unit, and a
   * connection inside a transaction holds every other one back until it commits (see PGliteWireServer).
   */
  maxConnections?: number
  /**
   * Called when the database thread dies while in use (not on `stop()`). The process cannot do anything useful
   * without its database, so by default the error is raised as an uncaught exception: the process exits with
   * it on stderr rather than answering 503 forever.
   */
  onUnexpectedExit?: (error: Error) => void
  /**
   * How often the database checks whether it has changed enough to be vacuumed and analyzed (see
   * embedded-maintenance.ts), ms; 0 turns maintenance off. Default 10 s.
   */
  maintenanceIntervalMs?: number
  /** Called after each maintenance run (diagnostics, tests). */
  onMaintenance?: (run: MaintenanceRun) => void
  /**
   * Called once the thread that serves the database is started: it loads PGlite and opens the database from then
   * on, and the caller's thread may do other work meanwhile (the CLI loads its command's modules).
   */
  onThreadStarted?: () => void
}

/** What `embedded-worker.ts` is started with. */
export interface EmbeddedWorkerData {
  mode: 'initialize' | 'serve'
  /** PGlite's directory; undefined for an in-memory database. */
  pgdata: string | undefined
  /** Where the wire server listens ('serve'). */
  listen: WireListen
  /** The password every connection must give, made for this start (never written down). */
  password: string
  maxConnections: number
  /** 0: no maintenance (and always 0 for 'initialize'). */
  maintenanceIntervalMs: number
}

/** What `embedded-worker.ts` reports back. */
export type EmbeddedWorkerMessage =
  | { type: 'ready'; address: WireAddress }
  | { type: 'loaded' }
  | { type: 'initialized' }
  | ({ type: 'maintained' } & MaintenanceRun)
  | { type: 'failed'; message: string }

const DEFAULT_MAINTENANCE_INTERVAL_MS = 10_000

// A worker told to stop closes PGlite cleanly (a checkpoint); past this, it is terminated.
const STOP_GRACE_MS = 10_000

/**
 * Starts PGlite on a worker thread and serves it over the PostgreSQL wire protocol to this process alone: its
 * sessions are a superuser's (one could rewrite API keys or switch off the audit triggers), so no other local
 * process may open one. With a data dir it listens on a Unix socket in `<dataDir>/socket`, a directory of mode
 * 0700; an in-memory database (tests) on an ephemeral loopback port. Either way every connection must give a
 * password made here for this start, which lives only in this process's memory (the connection string).
 *
 * The thread dies with the process (even on SIGKILL), and a failure to open the database rejects here with
 * PostgreSQL's own message.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
  const maxConnections = options.maxConnections ?? 64
  const password = randomBytes(32).toString('hex')
  let pgdata: string | undefined
  let listen: WireListen = { host: '127.0.0.1', port: 0 }
  let releaseLock = async () => {}
  if (options.dataDir !== undefined) {
    const dataDir = resolve(options.dataDir)
    pgdata = join(dataDir, 'pgdata')
    await mkdir(dataDir, { recursive: true, mode: 0o700 })
    releaseLock = await lockDataDir(dataDir)
    listen = await privateSocket(dataDir)
  }
  try {
    // A new database is a copy of the build's template when there is one (embedded-template.ts); otherwise initdb
    // runs on a thread of its own, which hands every byte of its two extra PostgreSQL instances back when it ends.
    const created = pgdata === undefined || existsSync(join(pgdata, 'PG_VERSION'))
    if (!created && !(await copyEmbeddedTemplate(pgdata!))) {
      await mkdir(pgdata!, { recursive: true, mode: 0o700 })
      const initializing = await runLoadedWorker({
        mode: 'initialize',
        pgdata,
        listen,
        password,
        maxConnections,
        maintenanceIntervalMs: 0,
      })
      await initializing.initialized()
    }
    const maintenanceIntervalMs = options.maintenanceIntervalMs ?? DEFAULT_MAINTENANCE_INTERVAL_MS
    const starting = runLoadedWorker(
      { mode: 'serve', pgdata, listen, password, maxConnections, maintenanceIntervalMs },
      options.onMaintenance,
    )
    options.onThreadStarted?.()
    const started = await starting
    const address = await started.ready()
    return serving(started, address, connectionStringFor(address, password), options, releaseLock)
  } catch (err) {
    await releaseLock()
    throw err
  }
}

/** PostgreSQL clients look for a server's socket under this name in the directory they are given. */
const SOCKET_FILE = '.s.PGSQL.5432'
/** A Unix socket's path must fit in 108 bytes (sun_path), its terminating zero included. */
const MAX_SOCKET_PATH_BYTES = 107

/**
 * The socket the data dir's database listens on, in `<dataDir>/socket` with mode 0700 (set again at every start:
 * only this user reaches what is inside). A data dir whose path is too long for a socket gets a loopback port,
 * still behind the password.
 */
async function privateSocket(dataDir: string): Promise<WireListen> {
  const directory = join(dataDir, 'socket')
  const path = join(directory, SOCKET_FILE)
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) return { host: '127.0.0.1', port: 0 }
  await mkdir(directory, { recursive: true, mode: 0o700 })
  await chmod(directory, 0o700)
  return { path }
}

/** The URL `pg` connects with: a socket is named by its directory (`host`), as libpq does. */
export function connectionStringFor(address: WireAddress, password: string): string {
  if ('path' in address) {
    const directory = address.path.slice(0, address.path.length - SOCKET_FILE.length - 1)
    return `postgres://postgres:${password}@/postgres?host=${encodeURIComponent(directory)}`
  }
  return `postgres://postgres:${password}@${address.host}:${address.port}/postgres`
}

/**
 * How long a new database thread may take to load its modules (it says so before it touches the database). Under
 * tsx (tests, `npm run dev`) the thread registers tsx's module hooks first, and Node's module hooks can deadlock a
 * thread that loads through them (nodejs/node#50948): such a thread never runs a line, at no CPU, and whoever waits
 * for the database would wait forever. One that has not loaded in this long is ended and started again.
 */
const LOAD_TIMEOUT_MS = 30_000
const LOAD_ATTEMPTS = 3

function runLoadedWorker(
  data: EmbeddedWorkerData,
  onMaintenance?: (run: MaintenanceRun) => void,
): Promise<RunningWorker> {
  return firstToLoad(() => runWorker(data, onMaintenance), LOAD_TIMEOUT_MS, LOAD_ATTEMPTS)
}

/** What `firstToLoad` needs of a started thread. */
export interface LoadingThread {
  loaded: Promise<unknown>
  exited: Promise<unknown>
  worker: { terminate(): Promise<unknown> }
}

/**
 * Starts a thread and returns it once it has loaded (or exited: a thread that fails while loading is not started
 * again, its own report says why); one that has done neither within `timeoutMs` is terminated and started again,
 * up to `attempts` times in all.
 */
export async function firstToLoad<T extends LoadingThread>(
  start: () => T,
  timeoutMs: number,
  attempts: number,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const started = start()
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs)
    })
    const outcome = await Promise.race([started.loaded, started.exited, timedOut])
    clearTimeout(timer)
    if (outcome !== 'timeout') return started
    await started.worker.terminate()
    if (attempt >= attempts)
      throw new Error(
        `could not start the embedded database: its thread did not load within ${timeoutMs} ms, ${attempts} times`,
      )
  }
}

interface RunningWorker {
  worker: Worker
  /** Resolves once the thread has loaded its modules (before it opens the database). */
  loaded: Promise<'loaded'>
  /** Resolves with the worker's 'ready' report; rejects when it fails or exits first. */
  ready(): Promise<WireAddress>
  /** Resolves when an 'initialize' worker has created the directory and exited; rejects on failure. */
  initialized(): Promise<void>
  /** Resolves with the exit code once the thread has ended, whatever the reason. */
  exited: Promise<number>
  /** The last uncaught error the thread raised, if any. */
  lastError(): Error | undefined
}

function runWorker(data: EmbeddedWorkerData, onMaintenance?: (run: MaintenanceRun) => void): RunningWorker {
  const worker = spawnWorker(data)
  let error: Error | undefined
  let failure: string | undefined
  let initialized = false
  let resolveLoaded: (value: 'loaded') => void = () => {}
  const loaded = new Promise<'loaded'>((res) => {
    resolveLoaded = res
  })
  let resolveReady: (address: WireAddress) => void = () => {}
  const ready = new Promise<WireAddress>((res) => {
    resolveReady = res
  })
  worker.on('message', (message: EmbeddedWorkerMessage) => {
    if (message.type === 'loaded') resolveLoaded('loaded')
    else if (message.type === 'ready') resolveReady(message.address)
    else if (message.type === 'initialized') initialized = true
    else if (message.type === 'maintained')
      onMaintenance?.({ durationMs: message.durationMs, commands: message.commands })
    else failure = message.message
  })
  worker.on('error', (err) => {
    error = err
  })
  const exited = new Promise<number>((res) => worker.once('exit', res))
  // Both settle on exit at the latest, so a thread that dies while starting can never leave the caller waiting.
  const startFailure = exited.then((code) => {
    const reason = failure ?? error?.message ?? `its thread exited with code ${code}`
    const what = data.mode === 'initialize' ? 'create' : 'open'
    const where = data.pgdata ?? 'memory'
    return new Error(`could not ${what} the embedded database (${where}): ${reason}`)
  })
  return {
    worker,
    loaded,
    ready: () => Promise.race([ready, startFailure.then((err) => Promise.reject(err))]),
    initialized: () => startFailure.then((err) => (initialized ? undefined : Promise.reject(err))),
    exited,
    lastError: () => error,
  }
}

/**
 * The worker's entry point: the compiled `embedded-worker.js` next to this file in production; under tsx (tests,
 * `npm run dev`) the TypeScript source, with tsx registered in the worker first, since on Node 20 tsx registers
 * its loader on the main thread only.
 */
function spawnWorker(data: EmbeddedWorkerData): Worker {
  // The thread's JavaScript is PGlite's glue and the wire server: a worker's young generation does.
  const options = { workerData: data, resourceLimits: WORKER_HEAP }
  const fromSource = import.meta.url.endsWith('.ts')
  const entry = new URL(fromSource ? './embedded-worker.ts' : './embedded-worker.js', import.meta.url)
  if (!fromSource) return new Worker(entry, options)
  const tsx = import.meta.resolve('tsx/esm/api')
  const bootstrap = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}) })`
  return new Worker(bootstrap, { ...options, eval: true })
}

function serving(
  started: RunningWorker,
  address: WireAddress,
  connectionString: string,
  options: EmbeddedOptions,
  releaseLock: () => Promise<void>,
): EmbeddedPostgres {
  const { worker } = started
  let stopping: Promise<void> | null = null
  void started.exited.then((code) => {
    if (stopping) return
    const cause = started.lastError()
    const error = new Error(
      `the embedded database thread exited unexpectedly (code ${code})${cause ? `: ${cause.message}` : ''}`,
      { cause },
    )
    if (options.onUnexpectedExit) options.onUnexpectedExit(error)
    else
      process.nextTick(() => {
        throw error
      })
  })
  return {
    connectionString,
    address,
    worker,
    stop() {
      stopping ??= (async () => {
        worker.postMessage({ type: 'stop' })
        const grace = setTimeout(() => void worker.terminate(), STOP_GRACE_MS)
        await started.exited
        clearTimeout(grace)
        await releaseLock()
      })()
      return stopping
    },
  }
}

/**
 * Two processes opening one PGlite directory would corrupt it: the first one holds `embedded.pid`, and a
 * second one is refused with a clear message (a stale file from a killed process is taken over).
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const file = join(dataDir, 'embedded.pid')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(file, String(process.pid), { flag: 'wx', mode: 0o600 })
      return () => rm(file, { force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const holder = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10)
      if (Number.isInteger(holder) && isAlive(holder)) {
        throw new Error(
          `another Arbiter process (pid ${holder}) is using the embedded database in ${dataDir}; stop it or set DATABASE_URL`,
        )
      }
      await rm(file, { force: true })
    }
  }
  throw new Error(`could not lock the embedded database in ${dataDir}`)
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
