import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { VerifiableLog } from './audit-log/verifiable-log.ts'
import { describeCliFailure, NoDatabaseError } from './cli-failure.ts'
import type { Config } from './config.ts'
import { type OpenDatabase, openDatabase } from './db/open-database.ts'
import type { Pool } from './db/pool.ts'
import { withStatusLine } from './progress-bar.ts'

/**
 * How the CLI's commands open the database. The embedded database's thread is started first, and what the command
 * needs (the database driver, the services, the audit log) loads on this thread while it starts: a command waits
 * for the longer of the two, not for both one after the other.
 */

/**
 * Whether a command may create the database it opens. Only `migrate` and `keys create` (the first admin key,
 * before the first start) may; a command that reads or changes what a database holds refuses to run on none
 * (`NoDatabaseError`, exit 2) rather than create an empty one and report on it.
 */
export type Creates = 'may-create' | 'existing-only'

/** The database as a command gets it: a pool, migrated (`applied`: the migrations this run applied). */
export interface CommandDatabase {
  pool: Pool
  applied: string[]
  /** The connection string the pool uses (for connections of a command's own). */
  connectionString: string
}

/**
 * Opens the database, migrates it, and runs `fn` with it and the modules `load` loads (loaded while the embedded
 * database starts); closes everything after.
 */
export async function withDatabase<M, T>(
  config: Config,
  creates: Creates,
  load: () => Promise<M>,
  fn: (database: CommandDatabase, modules: M) => Promise<T>,
): Promise<T> {
  if (creates === 'existing-only') assertEmbeddedDatabaseExists(config)
  let processStarted = () => {}
  const started = new Promise<void>((resolve) => {
    processStarted = resolve
  })
  const opening = openDatabase(config, { onProcessStarted: () => processStarted() })
  // Awaited once the modules are in; until then a failure to open must not count as unhandled.
  const settled = opening.then(
    () => {},
    () => {},
  )
  // Loading modules keeps this thread busy: the database's process is started first (or the opening is over).
  await Promise.race([started, settled])
  let loaded: [
    M,
    typeof import('./db/pool.ts'),
    typeof import('./db/migrate.ts'),
    typeof import('./db/statement.ts'),
  ]
  try {
    loaded = await Promise.all([
      load(),
      import('./db/pool.ts'),
      import('./db/migrate.ts'),
      import('./db/statement.ts'),
    ])
  } catch (err) {
    await (await opening.catch(() => null))?.embedded?.stop()
    throw err
  }
  const [modules, { createPool }, { migrate }, statements] = loaded
  const database = await databaseOpened(config, opening)
  const pool = createPool({ connectionString: database.connectionString, max: database.poolMax })
  try {
    if (creates === 'existing-only') await assertSchemaExists(pool, statements)
    const applied = await migrate(pool)
    return await fn({ pool, applied, connectionString: database.connectionString }, modules)
  } finally {
    await pool.end()
    await database.embedded?.stop()
  }
}

/** The database once open; opening the embedded one takes a second or two: a terminal is told what it waits for. */
function databaseOpened(config: Config, opening: Promise<OpenDatabase>): Promise<OpenDatabase> {
  if (!process.stderr.isTTY || config.databaseUrl) return opening
  return withStatusLine(
    process.stderr,
    `opening the embedded database in ${resolve(config.dataDir)}`,
    () => opening,
  )
}

/** Without DATABASE_URL: the data dir must hold an embedded database already (opening one would create it). */
function assertEmbeddedDatabaseExists(config: Config): void {
  if (config.databaseUrl) return
  const dataDir = resolve(config.dataDir)
  if (!existsSync(join(dataDir, 'pgdata', 'PG_VERSION'))) {
    throw new NoDatabaseError(
      `no Arbiter database in ${dataDir}: set ARBITER_DATA_DIR to the service's data dir, or DATABASE_URL`,
    )
  }
}

/** A database that Arbiter never migrated holds no Arbiter data: nothing to read, and nothing is created. */
async function assertSchemaExists(
  pool: Pool,
  { queryFirst, statement }: typeof import('./db/statement.ts'),
): Promise<void> {
  const schema = await queryFirst(
    pool,
    statement<{ present: boolean }>(`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`),
  )
  if (!schema?.present) {
    throw new NoDatabaseError(
      'no Arbiter database at DATABASE_URL (it has no Arbiter schema): start the service or run `arbiter migrate` first',
    )
  }
}

/**
 * Runs `fn` with the audit log open: this process's sequencer helps (or takes over from a stopped service) so
 * that what the command reads includes every change committed before it started.
 */
export async function withAuditLog<T>(
  config: Config,
  err: (text: string) => void,
  fn: (log: VerifiableLog, pool: Pool) => Promise<T>,
): Promise<T> {
  const load = () =>
    Promise.all([
      import('./audit-log/verifiable-log.ts'),
      import('./audit-log/verify-workers.ts'),
      import('./crypto/signing-key.ts'),
      import('./services/signing-keys.ts'),
    ])
  return withDatabase(config, 'existing-only', load, async ({ pool, connectionString }, modules) => {
    const [{ VerifiableLog }, workers, { loadSigningKey }, { registerSigningKey }] = modules
    const key = await loadSigningKey({ signingKey: config.signingKey, dataDir: config.dataDir })
    await registerSigningKey(pool, key)
    const log = await VerifiableLog.open(pool, key, {
      origin: config.logOrigin,
      checkpointIntervalMs: config.checkpointIntervalMs,
      // Building the tree over a large existing log can take a while; the CLI waits for it.
      catchUpTimeoutMs: 30 * 60_000,
      // The embedded database serves one statement at a time: the chunks are checked in this thread (see
      // EMBEDDED_VERIFY_CONNECTIONS); a server's many processes are kept busy by worker threads.
      parallelVerify: config.databaseUrl
        ? { connectionString, workers: workers.verifyWorkers() }
        : { connectionString, workers: workers.EMBEDDED_VERIFY_CONNECTIONS, inThread: true },
      onError: (e) => err(`audit sequencer: ${describeCliFailure(e).message}\n`),
    })
    log.start()
    try {
      return await fn(log, pool)
    } finally {
      await log.stop()
    }
  })
}
