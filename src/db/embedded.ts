import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { PGliteWireServer } from './pglite-wire-server.ts'

export interface EmbeddedPostgres {
  /** A `postgres://` URL the app's `pg` pool connects to: the app has one data path either way. */
  connectionString: string
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
}

/** Starts PGlite and serves it over the PostgreSQL wire protocol on 127.0.0.1 (an ephemeral port). */
export async function startEmbeddedPostgres(options: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
  let db: PGlite
  let releaseLock = async () => {}
  if (options.dataDir !== undefined) {
    const dir = resolve(join(options.dataDir, 'pgdata'))
    await mkdir(dir, { recursive: true })
    releaseLock = await lockDataDir(resolve(options.dataDir))
    db = await PGlite.create(dir)
  } else {
    db = await PGlite.create()
  }
  const server = new PGliteWireServer(db, {
    host: '127.0.0.1',
    port: 0,
    maxConnections: options.maxConnections ?? 64,
  })
  const { host, port } = await server.start()
  const connectionString = `postgres://postgres@${host}:${port}/postgres`
  let stopped = false
  return {
    connectionString,
    async stop() {
      if (stopped) return
      stopped = true
      await server.stop()
      await db.close()
      await releaseLock()
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
