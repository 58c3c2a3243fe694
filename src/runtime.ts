import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import { buildApp } from './app.ts'
import type { Config } from './config.ts'
import { loadSigningKey } from './crypto/signing-key.ts'
import type { EmbeddedPostgres } from './db/embedded.ts'
import { createPool, type Pool } from './db/pool.ts'

/**
 * The database the process uses: the server at DATABASE_URL, or the embedded one in the data dir.
 * The embedded database runs one transaction at a time, so its pool holds one connection: more would only
 * queue inside PGlite while holding sockets.
 */
export async function openDatabase(
  config: Config,
): Promise<{ connectionString: string; poolMax: number; embedded?: EmbeddedPostgres }> {
  if (config.databaseUrl) return { connectionString: config.databaseUrl, poolMax: config.dbPoolMax }
  // Loaded only when used: PGlite's WebAssembly build costs ~40 MB of memory a server-backed process never needs.
  const { startEmbeddedPostgres } = await import('./db/embedded.ts')
  const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir })
  return { connectionString: embedded.connectionString, poolMax: 1, embedded }
}

/** Builds the app from parsed config: database, signing key, then `buildApp`. Used by server.ts and the CLI. */
export async function startRuntime(
  config: Config,
  logger: FastifyServerOptions['logger'],
  env: Record<string, string | undefined>,
): Promise<{ app: FastifyInstance; close: () => Promise<void> }> {
  const database = await openDatabase(config)
  try {
    const signingKey = await loadSigningKey({ signingKey: config.signingKey, dataDir: config.dataDir })
    const app = await buildApp({
      config: {
        connectionString: database.connectionString,
        dbPoolMax: database.poolMax,
        bodyLimitBytes: config.bodyLimitBytes,
        rateLimitPerMinute: config.rateLimitPerMinute,
        probeAllowedHosts: config.probeAllowedHosts,
        probeAllowPrivate: config.probeAllowPrivate,
        probeEnv: probeEnvironment(env),
        checkpointIntervalMs: config.checkpointIntervalMs,
        logOrigin: config.logOrigin,
      },
      signingKey,
      logger,
    })
    return {
      app,
      close: async () => {
        await app.close()
        await database.embedded?.stop()
      },
    }
  } catch (err) {
    await database.embedded?.stop()
    throw err
  }
}

/** A bare pool for CLI commands that need no HTTP app (migrate, keys, audit). */
export async function openPool(config: Config): Promise<{ pool: Pool; close: () => Promise<void> }> {
  const database = await openDatabase(config)
  const pool = createPool({ connectionString: database.connectionString, max: database.poolMax })
  return {
    pool,
    close: async () => {
      await pool.end()
      await database.embedded?.stop()
    },
  }
}

/**
 * The variables probe headers may name with `{env: NAME}`: the process environment minus Arbiter's own
 * secrets, so a probe definition can never ship the database URL or a key to a remote host.
 */
export function probeEnvironment(
  env: Record<string, string | undefined>,
): Record<string, string | undefined> {
  return Object.fromEntries(
    Object.entries(env).filter(
      ([name]) => !name.startsWith('ARBITER_') && !/DATABASE_URL$/.test(name) && !name.startsWith('PG'),
    ),
  )
}
