import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { type RunningProcess, runLoadedProcess, send } from './embedded-child.ts'
import type { MaintenanceRun } from './embedded-maintenance.ts'
import { copyEmbeddedTemplate } from './embedded-template.ts'
import type { WireAddress, WireListen } from './pglite-wire-server.ts'

/**
 * Connections the app's pool should hold on the embedded database. It runs one transaction at a time whatever
 * the pool, but with a second connection the next request's statements are already waiting in the database's
 * process when a transaction ends, instead of a round trip behind it; more connections do no better (measured
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
  /** The process PGlite runs in (for diagnostics and tests; `stop()` ends it). */
  child: ChildProcess
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
   * Called when the database's process dies while in use (not on `stop()`). The process cannot do anything useful
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
   * Called once the process that serves the database is started: it loads PGlite and opens the database from then
   * on, and the caller may do other work meanwhile (the CLI loads its command's modules).
   */
  onProcessStarted?: () => void
}

const DEFAULT_MAINTENANCE_INTERVAL_MS = 10_000

// The database's process told to stop closes PGlite cleanly (a checkpoint); past this, it is killed.
const STOP_GRACE_MS = 10_000

/**
 * Starts PGlite in a process of its own (embedded-child.ts) and serves it over the PostgreSQL wire protocol to
 * this process alone: its sessions are a superuser's (one could rewrite API keys or switch off the audit
 * triggers), so no other local process may open one. With a data dir it listens on a Unix socket in `<dataDir>/socket`, a directory of mode
 * 0700; an in-memory database (tests) on an ephemeral loopback port. Either way every connection must give a
 * password made here for this start, which lives only in this process's memory (the connection string).
 *
 * That process exits when this one does (even on SIGKILL), this one fails loudly when that one dies
 * (`onUnexpectedExit`), and a failure to open the database rejects here with PostgreSQL's own message.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
  const maxConnections = options.maxConnections ?? 64
  const password = randomBytes(32).toString('hex')
  let pgdata: string | undefined
  let listen: WireListen = { host: '127.0.0.1', port: 0 }
  let lock: DataDirLock = { hold: async () => {}, release: async () => {} }
  let running: RunningProcess | undefined
  if (options.dataDir !== undefined) {
    const dataDir = resolve(options.dataDir)
    pgdata = join(dataDir, 'pgdata')
    await mkdir(dataDir, { recursive: true, mode: 0o700 })
    lock = await lockDataDir(dataDir)
    listen = await privateSocket(dataDir)
  }
  try {
    // A new database is a copy of the build's template when there is one (embedded-template.ts); otherwise initdb
    // runs in a process of its own, which hands every byte of its two extra PostgreSQL instances back when it ends.
    const created = pgdata === undefined || existsSync(join(pgdata, 'PG_VERSION'))
    if (!created && !(await copyEmbeddedTemplate(pgdata!))) {
      await mkdir(pgdata!, { recursive: true, mode: 0o700 })
      running = await runLoadedProcess({
        mode: 'initialize',
        pgdata,
        listen,
        password,
        maxConnections,
        maintenanceIntervalMs: 0,
      })
      await lock.hold(running.child.pid)
      await running.initialized()
    }
    const maintenanceIntervalMs = options.maintenanceIntervalMs ?? DEFAULT_MAINTENANCE_INTERVAL_MS
    const starting = runLoadedProcess(
      { mode: 'serve', pgdata, listen, password, maxConnections, maintenanceIntervalMs },
      options.onMaintenance,
    )
    options.onProcessStarted?.()
    running = await starting
    await lock.hold(running.child.pid)
    const address = await running.ready()
    return serving(running, address, connectionStringFor(address, password), options, lock.release)
  } catch (err) {
    // A process still running (its start failed on this side) must not hold the directory on.
    await running?.kill()
    await lock.release()
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

function serving(
  started: RunningProcess,
  address: WireAddress,
  connectionString: string,
  options: EmbeddedOptions,
  releaseLock: () => Promise<void>,
): EmbeddedPostgres {
  const { child } = started
  let stopping: Promise<void> | null = null
  void started.exited.then((how) => {
    if (stopping) return
    const cause = started.lastError()
    const error = new Error(
      `the embedded database process exited unexpectedly (${how})${cause ? `: ${cause.message}` : ''}`,
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
    child,
    stop() {
      stopping ??= (async () => {
        send(child, { type: 'stop' })
        const grace = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS)
        await started.exited
        clearTimeout(grace)
        await releaseLock()
      })()
      return stopping
    },
  }
}

/** A data dir held by this process and the database's process it started. */
interface DataDirLock {
  /** Records the database's process as holding the directory too (it may outlive this one by a few seconds). */
  hold(pid: number | undefined): Promise<void>
  release(): Promise<void>
}

/**
 * Two processes opening one PGlite directory would corrupt it. `embedded.pid` names the pids holding it, one a
 * line: the process that started the database and the database's own process (which, its parent killed, still
 * closes the database). A start while any of them lives is refused with a clear message; a stale file, all of
 * whose processes are gone, is taken over.
 */
async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const file = join(dataDir, 'embedded.pid')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 })
      return {
        async hold(pid) {
          if (pid === undefined) return
          // Written beside and renamed over: a start reading the file never sees it half written.
          await writeFile(`${file}.${process.pid}`, `${process.pid}\n${pid}\n`, { mode: 0o600 })
          await rename(`${file}.${process.pid}`, file)
        },
        release: () => rm(file, { force: true }),
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const holders = (await readFile(file, 'utf8').catch(() => '')).split('\n').map(Number)
      const holder = holders.find((pid) => Number.isInteger(pid) && pid > 0 && isAlive(pid))
      if (holder !== undefined) {
        throw new Error(
          `another Arbiter process (pid ${holder}) is using the embedded database in ${dataDir}; stop it or set DATABASE_URL`,
        )
      }
      await rm(file, { force: true })
    }
  }
  throw new Error(`could not lock the embedded database in ${dataDir}`)
}

/**
 * Whether a process runs. A zombie does not: it has exited and holds no file, but stays in the process table
 * until whoever adopted it reaps it (the database's process, orphaned, is adopted by init, which may take its time).
 */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
  try {
    // /proc/<pid>/stat: the state follows the command name's closing parenthesis (Linux).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat[stat.lastIndexOf(')') + 2] !== 'Z'
  } catch {
    return true
  }
}
