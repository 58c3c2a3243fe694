import v8 from 'node:v8'
import { isMainThread, parentPort, workerData } from 'node:worker_threads'
import { PGlite } from '@electric-sql/pglite'
import type { EmbeddedWorkerData, EmbeddedWorkerMessage } from './embedded.ts'
import { EmbeddedMaintenance } from './embedded-maintenance.ts'
import { settingsArguments } from './embedded-settings.ts'
import { PGliteWireServer } from './pglite-wire-server.ts'

/**
 * The embedded database's thread: PGlite and the wire server that serves it, both off the application's event
 * loop (PGlite runs PostgreSQL synchronously on the thread that calls it). Started by `startEmbeddedPostgres`.
 *
 * 'initialize' creates a fresh data directory and exits: creating one runs initdb in two extra PGlite instances,
 * and a thread that ends hands every byte of them back, where a long-lived one would keep them until a GC that
 * may never come. 'serve' opens the directory (or an in-memory database) and serves it until told to stop.
 */

// V8 compiles PostgreSQL's WebAssembly with its baseline compiler, then recompiles hot functions with its
// optimizing one, whose working memory stays in the allocator for good (bench/README.md, "Figures behind the
// code"), while the database's time goes mostly to the wire, the file system and PGlite's JavaScript. Baseline
// code only, set with Node's documented `v8.setFlagsFromString`. V8's flags are the process's, and a worker
// thread cannot be given V8 flags of its own (its `execArgv` refuses them): any other WebAssembly the process
// compiles from now on (undici's HTTP parser) gets baseline code too. docs/embedded-database.md says why this is
// accepted.
v8.setFlagsFromString('--liftoff-only')

// PGlite lets its WebAssembly memory grow to 2 GB, and memory never shrinks: one query building a huge value
// would keep the process that large for good. Past this cap PostgreSQL's allocation fails and the statement ends
// with PostgreSQL's "out of memory" error; the database carries on. PGlite offers no option for the maximum, so
// the standard constructor it calls is capped, in this thread only (each thread has its own WebAssembly object;
// docs/embedded-database.md).
const MAX_WASM_MEMORY_MB = 256
capWebAssemblyMemory(MAX_WASM_MEMORY_MB)

function capWebAssemblyMemory(megabytes: number): void {
  // Typed here: the project's TypeScript libraries (ES2023, Node) do not declare WebAssembly.
  type Descriptor = { initial: number; maximum?: number; shared?: boolean }
  type MemoryConstructor = (new (descriptor: Descriptor) => object) & { prototype: object }
  const wasm = (globalThis as unknown as { WebAssembly: { Memory: MemoryConstructor } }).WebAssembly
  const Native = wasm.Memory
  const maxPages = megabytes * 16 // 64 KiB pages
  function Memory(descriptor: Descriptor): object {
    return new Native({ ...descriptor, maximum: Math.min(descriptor.maximum ?? maxPages, maxPages) })
  }
  Memory.prototype = Native.prototype
  Object.defineProperty(wasm, 'Memory', { value: Memory, writable: true, configurable: true })
}

if (isMainThread || parentPort === null) throw new Error('embedded-worker runs as a worker thread')
const port = parentPort
const data = workerData as EmbeddedWorkerData

function send(message: EmbeddedWorkerMessage): void {
  port.postMessage(message)
}

// PostgreSQL's own account of a failure goes to its stderr, which PGlite swallows; the last lines are kept so a
// start that fails can say why (e.g. "database files are incompatible with server").
const stderrTail: string[] = []

function failed(err: unknown): never {
  const said = stderrTail.filter((line) => /FATAL|PANIC|ERROR/.test(line)).join('; ')
  send({ type: 'failed', message: said ? `${(err as Error).message} (${said})` : (err as Error).message })
  process.exit(1)
}

async function open(): Promise<PGlite> {
  const settings = settingsArguments()
  const db = await PGlite.create(data.pgdata, {
    startParams: [...PGlite.defaultStartParams, ...settings],
    // initdb runs PostgreSQL with these too (and writes them into a new directory's postgresql.conf): creating a
    // database is the peak of the embedded database's memory.
    initDbStartParams: settings,
    onStderr: (text) => {
      stderrTail.push(text)
      if (stderrTail.length > 20) stderrTail.shift()
      return false
    },
  })
  await db.waitReady
  return db
}

async function main(): Promise<void> {
  send({ type: 'loaded' })
  let db: PGlite
  try {
    db = await open()
  } catch (err) {
    failed(err)
  }
  if (data.mode === 'initialize') {
    await db.close()
    send({ type: 'initialized' })
    process.exit(0)
  }
  const server = new PGliteWireServer(db, {
    listen: data.listen,
    maxConnections: data.maxConnections,
    password: data.password,
  })
  try {
    const address = await server.start()
    const maintenance =
      data.maintenanceIntervalMs > 0
        ? new EmbeddedMaintenance((task) => server.whenIdle(task), {
            intervalMs: data.maintenanceIntervalMs,
            onRun: (run) => send({ type: 'maintained', ...run }),
          })
        : null
    maintenance?.start()
    port.on('message', (message: { type: 'stop' }) => {
      if (message.type !== 'stop') return
      void (async () => {
        // No new maintenance command starts; one waiting for the session is abandoned when the server stops.
        const maintenanceStopped = maintenance?.stop()
        await server.stop()
        await maintenanceStopped
        await db.close()
        process.exit(0)
      })()
    })
    send({ type: 'ready', address })
  } catch (err) {
    failed(err)
  }
}

await main()
