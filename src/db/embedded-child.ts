import { type ChildProcess, fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { MaintenanceRun } from './embedded-maintenance.ts'
import type { WireAddress, WireListen } from './pglite-wire-server.ts'

/**
 * The embedded database's process (embedded-process.ts), from this side: started with its own node flags,
 * supervised over the IPC channel.
 */

/** What the database's process opens, and how it serves it; sent once it has loaded (the 'start' command). */
export interface EmbeddedProcessData {
  mode: 'initialize' | 'serve'
  /** PGlite's directory; undefined for an in-memory database. */
  pgdata: string | undefined
  /** Where the wire server listens ('serve'). */
  listen: WireListen
  /** The password every connection must give, made for this start (never written down, never on a command line). */
  password: string
  maxConnections: number
  /** 0: no maintenance (and always 0 for 'initialize'). */
  maintenanceIntervalMs: number
}

/** What this side sends. */
export type EmbeddedProcessCommand = ({ type: 'start' } & EmbeddedProcessData) | { type: 'stop' }

/** What the database's process reports back. */
export type EmbeddedProcessMessage =
  | { type: 'ready'; address: WireAddress }
  | { type: 'loaded' }
  | { type: 'initialized' }
  | ({ type: 'maintained' } & MaintenanceRun)
  | { type: 'failed'; message: string }

/**
 * The node flags of the database's process, its own: V8's flags belong to a process, and these must not reach the
 * application's (docs/embedded-database.md).
 * - Baseline WebAssembly code only: V8's optimizing tier would recompile PostgreSQL's hot functions and keep its
 *   working memory for good (bench/README.md, "Figures behind the code"), while the database's time goes mostly
 *   to the wire, the file system and PGlite's JavaScript.
 * - WebAssembly memory capped at 4096 pages of 64 KiB, 256 MB. PGlite lets its memory grow to 2 GB, and it never
 *   shrinks: one query building a huge value would keep the process that large for good. Past the cap
 *   PostgreSQL's allocation fails, the statement ends with its "out of memory" error, and the database carries on.
 * - The young generation worker threads get (src/worker-heap.ts: 8 MB semi-spaces): PGlite's glue and the wire
 *   server hold little across collections.
 */
export const EMBEDDED_NODE_FLAGS: readonly string[] = [
  '--liftoff-only',
  '--wasm-max-mem-pages=4096',
  '--max-semi-space-size=8',
]

/**
 * Forks the database's process: the compiled `embedded-process.js` next to this file in production; under tsx
 * (tests, `npm run dev`) the TypeScript source, with tsx's loader. Its output goes where this process's goes.
 */
export function forkEmbeddedProcess(): ChildProcess {
  const fromSource = import.meta.url.endsWith('.ts')
  const entry = new URL(fromSource ? './embedded-process.ts' : './embedded-process.js', import.meta.url)
  const execArgv = [...EMBEDDED_NODE_FLAGS]
  if (fromSource) execArgv.push('--import', import.meta.resolve('tsx'))
  return fork(fileURLToPath(entry), [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
}

/** What `firstToLoad` needs of a started process. */
export interface LoadingProcess {
  loaded: Promise<unknown>
  exited: Promise<unknown>
  /** Ends it at once (SIGKILL); resolves once it has exited. */
  kill(): Promise<unknown>
}

/**
 * Starts a process and returns it once it has loaded (or exited: one that fails while loading is not started
 * again, its own report says why); one that has done neither within `timeoutMs` is killed and started again, up
 * to `attempts` times in all.
 */
export async function firstToLoad<T extends LoadingProcess>(
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
    await started.kill()
    if (attempt >= attempts)
      throw new Error(
        `could not start the embedded database: its process did not load within ${timeoutMs} ms, ${attempts} times`,
      )
  }
}

/**
 * How long a new database process may take to load its modules (it says so before it touches the database). One
 * that has not loaded in this long (a machine swapping, a file system stalled) is ended and started again, so
 * whoever waits for the database is not left waiting forever.
 */
const LOAD_TIMEOUT_MS = 30_000
const LOAD_ATTEMPTS = 3

export interface RunningProcess extends LoadingProcess {
  child: ChildProcess
  /** Resolves once the process has loaded its modules (before it opens the database). */
  loaded: Promise<'loaded'>
  /** Resolves with the 'ready' report; rejects when it fails or exits first. */
  ready(): Promise<WireAddress>
  /** Resolves when an 'initialize' process has created the directory and exited; rejects on failure. */
  initialized(): Promise<void>
  /** Resolves once the process has ended, whatever the reason, with how (`code 1`, `signal SIGKILL`). */
  exited: Promise<string>
  /** The last error the child process object raised (e.g. it could not be started), if any. */
  lastError(): Error | undefined
}

/** Starts the database's process, again if it does not load in time (`firstToLoad`); resolves once it has loaded. */
export function runLoadedProcess(
  data: EmbeddedProcessData,
  onMaintenance?: (run: MaintenanceRun) => void,
): Promise<RunningProcess> {
  return firstToLoad(() => runProcess(data, onMaintenance), LOAD_TIMEOUT_MS, LOAD_ATTEMPTS)
}

function runProcess(
  data: EmbeddedProcessData,
  onMaintenance?: (run: MaintenanceRun) => void,
): RunningProcess {
  const child = forkEmbeddedProcess()
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
  child.on('message', (received) => {
    const message = received as EmbeddedProcessMessage
    if (message.type === 'loaded') {
      resolveLoaded('loaded')
      send(child, { type: 'start', ...data })
    } else if (message.type === 'ready') resolveReady(message.address)
    else if (message.type === 'initialized') initialized = true
    else if (message.type === 'maintained')
      onMaintenance?.({ durationMs: message.durationMs, commands: message.commands })
    else failure = message.message
  })
  child.on('error', (err) => {
    error = err
  })
  // 'close', not 'exit': it comes once the IPC channel has delivered every message the process sent.
  const exited = new Promise<string>((res) =>
    child.once('close', (code, signal) => res(code === null ? `signal ${signal}` : `code ${code}`)),
  )
  // Both settle on exit at the latest, so a process that dies while starting can never leave the caller waiting.
  const startFailure = exited.then((how) => {
    const reason = failure ?? error?.message ?? `its process exited with ${how}`
    const what = data.mode === 'initialize' ? 'create' : 'open'
    return new Error(`could not ${what} the embedded database (${data.pgdata ?? 'memory'}): ${reason}`)
  })
  return {
    child,
    loaded,
    ready: () => Promise.race([ready, startFailure.then((err) => Promise.reject(err))]),
    initialized: () => startFailure.then((err) => (initialized ? undefined : Promise.reject(err))),
    exited,
    kill: () => {
      child.kill('SIGKILL')
      return exited
    },
    lastError: () => error,
  }
}

/** Sends a command if the channel is still open; a process that is gone is reported by its exit, not here. */
export function send(child: ChildProcess, command: EmbeddedProcessCommand): void {
  if (child.connected) child.send(command, undefined, undefined, () => {})
}
