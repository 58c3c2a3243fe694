import { PGlite } from '@electric-sql/pglite'
import type { EmbeddedProcessCommand, EmbeddedProcessData, EmbeddedProcessMessage } from './embedded-child.ts'
import { EmbeddedMaintenance } from './embedded-maintenance.ts'
import { settingsArguments } from './embedded-settings.ts'
import { PGliteWireServer } from './pglite-wire-server.ts'

/**
 * The embedded database's process: PGlite and the wire server that serves it, off the application's process
 * (PGlite runs PostgreSQL synchronously on the thread that calls it). Started by `startEmbeddedPostgres` with the
 * node flags that bound its WebAssembly (embedded-child.ts; docs/embedded-database.md).
 *
 * It reports 'loaded', then waits for 'start': what to open, with the password of this start, which goes over the
 * IPC channel and never on a command line. 'initialize' creates a fresh data directory and exits: creating one
 * runs initdb in two extra PGlite instances, and a process that ends hands every byte of them back. 'serve' opens
 * the directory (or an in-memory database) and serves it until told to stop, or until its parent is gone.
 */

if (process.send === undefined) {
  throw new Error('embedded-process runs as a child process with an IPC channel (see startEmbeddedPostgres)')
}

// The parent directs this process, and closes the database cleanly with 'stop' once its own server has stopped. A
// terminal's Ctrl-C, a hang-up or a service manager's SIGTERM reach the whole process group: left to their
// default, they would end the database under the parent's requests while it shuts down.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => {})

// With its parent gone (killed, even by SIGKILL: the kernel closes the IPC channel), nobody can reach the database:
// it closes and the process exits. A database that does not close in this long is left to the exit.
const ORPHAN_GRACE_MS = 5_000

function send(message: EmbeddedProcessMessage): void {
  if (process.connected) process.send!(message)
}

/** Sends a last message and exits once it is written (an exit right after `send` may lose it). */
function finish(message: EmbeddedProcessMessage, code: number): Promise<never> {
  if (!process.connected) process.exit(code)
  process.send!(message, undefined, undefined, () => process.exit(code))
  return new Promise<never>(() => {})
}

// PostgreSQL's own account of a failure goes to its stderr, which PGlite swallows; the last lines are kept so a
// start that fails can say why (e.g. "database files are incompatible with server").
const stderrTail: string[] = []

function failed(err: unknown): Promise<never> {
  const said = stderrTail.filter((line) => /FATAL|PANIC|ERROR/.test(line)).join('; ')
  const message = said ? `${(err as Error).message} (${said})` : (err as Error).message
  return finish({ type: 'failed', message }, 1)
}

async function open(data: EmbeddedProcessData): Promise<PGlite> {
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

/** Closes what `serve` opened, in order; null until it serves (before that there is nothing to close cleanly). */
let closeDatabase: (() => Promise<void>) | null = null
let stopping: Promise<void> | null = null

function stop(): Promise<void> {
  stopping ??= (async () => {
    await closeDatabase?.()
    process.exit(0)
  })()
  return stopping
}

async function serve(data: EmbeddedProcessData): Promise<void> {
  let db: PGlite
  try {
    db = await open(data)
  } catch (err) {
    return failed(err)
  }
  if (data.mode === 'initialize') {
    await db.close()
    return finish({ type: 'initialized' }, 0)
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
    closeDatabase = async () => {
      // No new maintenance command starts; one waiting for the session is abandoned when the server stops.
      const maintenanceStopped = maintenance?.stop()
      await server.stop()
      await maintenanceStopped
      await db.close()
    }
    send({ type: 'ready', address })
  } catch (err) {
    return failed(err)
  }
}

let started = false
process.on('message', (message) => {
  const command = message as EmbeddedProcessCommand
  if (command.type === 'stop') void stop()
  else if (command.type === 'start' && !started) {
    started = true
    void serve(command)
  }
})
process.on('disconnect', () => {
  setTimeout(() => process.exit(1), ORPHAN_GRACE_MS).unref()
  void stop()
})
send({ type: 'loaded' })
