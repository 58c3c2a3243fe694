import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import type { Config } from './config.ts'
import { loadSigningKey, type SigningKey } from './crypto/signing-key.ts'
import { migrate } from './db/migrate.ts'
import { openDatabase } from './db/open-database.ts'
import { createPool, type Pool } from './db/pool.ts'
import { probeEnvironment } from './probes/probe-environment.ts'
import { registerSigningKey } from './services/signing-keys.ts'

/**
 * Makes the database ready for this build to serve: applies pending migrations (under an advisory lock, so
 * replicas starting together are safe) and records the signing key's public half (so the JWKS lists it).
 */
export async function prepareDatabase(pool: Pool, signingKey: SigningKey | null): Promise<string[]> {
  const applied = await migrate(pool)
  if (signingKey) await registerSigningKey(pool, signingKey)
  return applied
}

/** The service: database, migrations and signing key, then `buildApp`. Used by server.ts and the CLI. */
export async function startRuntime(
  config: Config,
  logger: FastifyServerOptions['logger'],
  env: Record<string, string | undefined>,
): Promise<{ app: FastifyInstance; close: () => Promise<void> }> {
  // The app's logger exists once the app is built; maintenance runs before that are not worth a line.
  let appLog: FastifyInstance['log'] | undefined
  const database = await openDatabase(config, {
    onMaintenance: (run) =>
      appLog?.info(
        { durationMs: Math.round(run.durationMs), commands: run.commands },
        'embedded database maintained (what autovacuum does on a server)',
      ),
  })
  try {
    const signingKey = await loadSigningKey({ signingKey: config.signingKey, dataDir: config.dataDir })
    const setup = createPool({ connectionString: database.connectionString, max: 1 })
    try {
      await prepareDatabase(setup, signingKey)
    } finally {
      await setup.end()
    }
    // Loaded here, not at the top: CLI commands that only need a pool start without the whole HTTP app.
    const { buildApp } = await import('./app.ts')
    const app = await buildApp({
      config: {
        connectionString: database.connectionString,
        dbPoolMax: database.poolMax,
        bodyLimitBytes: config.bodyLimitBytes,
        rateLimitPerMinute: config.rateLimitPerMinute,
        authFailuresPerMinute: config.authFailuresPerMinute,
        trustProxy: config.trustProxy,
        probeAllowedHosts: config.probeAllowedHosts,
        probeAllowPrivate: config.probeAllowPrivate,
        probeEnv: probeEnvironment(env),
        checkpointIntervalMs: config.checkpointIntervalMs,
        logOrigin: config.logOrigin,
        // The embedded database serves one process: revocations clear its key cache directly.
        keyCache: database.embedded ? 'local' : 'listen',
        sequencer: { lingerMs: config.sequencerLingerMs },
        webhooks: {
          allowedHosts: config.webhookAllowedHosts,
          allowPrivate: config.webhookAllowPrivate,
          maxAgeMs: config.webhookMaxAgeMs,
          disableAfterMs: config.webhookDisableAfterMs,
          retentionMs: config.webhookRetentionMs,
          retryScheduleMs: config.webhookRetryScheduleMs,
          attemptTimeoutMs: config.webhookAttemptTimeoutMs,
          leaseMs: config.webhookAttemptTimeoutMs + 20_000,
          // Replicas on PostgreSQL hear each other's NOTIFY; the embedded database serves this process alone, which
          // wakes its own worker.
          listen: !database.embedded,
          soleProcess: database.embedded !== undefined,
        },
      },
      signingKey,
      logger,
    })
    appLog = app.log
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
