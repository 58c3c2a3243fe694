import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { markBuildInUse } from './build-in-use.ts'
import { describeCliFailure } from './cli-failure.ts'
import { ConfigError, loadConfig } from './config.ts'
import { loggerOptions } from './logger.ts'

/** The process: config, logger, listen, graceful shutdown. The app itself never touches the process. */
export async function serve(): Promise<void> {
  markBuildInUse()
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig(process.env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`arbiter: ${err.message}\n`)
      process.exit(1)
    }
    throw err
  }
  // Tracing starts before the database driver and the HTTP app are loaded (its instrumentations patch them as
  // they load); with tracing off, no OpenTelemetry module is loaded at all.
  const tracing = config.tracing && (await import('./tracing/sdk.ts')).startTracing(config.tracing)
  const { startRuntime } = await import('./runtime.ts')
  const { ensureAdminKey } = await import('./services/keys.ts')
  // A person at a terminal reads lines; anything else (a file, a collector) gets one JSON object per line.
  const runtime = await startRuntime(
    config,
    loggerOptions(config, { pretty: process.stdout.isTTY === true, traceIds: tracing !== undefined }),
    process.env,
  )
  const { app } = runtime

  // A bootstrap key from the environment is already known to its owner: storing it before listening loses
  // nothing if the start fails, and a client that waits for /readyz can use it at once.
  if (config.bootstrapAdminKey !== undefined) await ensureAdminKey(app.services, config.bootstrapAdminKey)

  let closing = false
  const shutdown = async (signal: string) => {
    if (closing) {
      app.log.warn({ signal }, 'second signal: exiting now')
      process.exit(1)
    }
    closing = true
    app.log.info({ signal }, 'shutting down: no new connections, finishing in-flight requests')
    // A client still sending its body (or holding a request open) must not hold the shutdown: after the grace
    // period every remaining connection is closed, so the process exits and its database work ends.
    setTimeout(() => {
      app.log.warn(
        { graceMs: config.shutdownGraceMs },
        'grace period over: closing the remaining connections',
      )
      app.server.closeAllConnections()
    }, config.shutdownGraceMs).unref()
    try {
      await runtime.close()
      // The spans still batched are sent before the process ends.
      await tracing?.shutdown().catch(() => undefined)
      process.exit(0)
    } catch (err) {
      app.log.error({ err }, 'shutdown failed')
      process.exit(1)
    }
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))

  try {
    await app.listen({ port: config.port, host: config.host })
  } catch (err) {
    await runtime.close().catch(() => undefined)
    throw new Error(listenFailure(err, config.host, config.port))
  }

  // Generated only once the service is listening: a start that fails (the port taken, say) must not print, or
  // store, a key that would never be shown again.
  if (config.bootstrapAdminKey !== undefined) return
  const admin = await ensureAdminKey(app.services, undefined)
  if (admin.created === 'generated') {
    // Printed once, on stdout, never logged: this is the only time the secret exists outside its hash.
    process.stdout.write(
      `\nNo admin key existed, so one was created. Store it now; it will not be shown again:\n\n  ${admin.key}\n\n`,
    )
  }
}

/** Why the service could not listen, in words that say what to change. */
function listenFailure(err: unknown, host: string, port: number): string {
  const code = (err as NodeJS.ErrnoException).code
  const where = `${host}:${port}`
  if (code === 'EADDRINUSE')
    return `cannot listen on ${where}: the port is already in use (set PORT to a free one)`
  if (code === 'EACCES')
    return `cannot listen on ${where}: permission denied (use a port above 1023, or set PORT)`
  if (code === 'EADDRNOTAVAIL')
    return `cannot listen on ${where}: no such address on this machine (check HOST)`
  return `cannot listen on ${where}: ${(err as Error).message}`
}

/**
 * Whether `node <path>` ran this module. Compared as real paths: `dist` is a symbolic link to the current build
 * (scripts/build.mjs), and Node names a module by where the link leads.
 */
function isEntryPoint(path: string | undefined): boolean {
  if (path === undefined) return false
  try {
    return realpathSync(path) === realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
}

const invokedDirectly = isEntryPoint(process.argv[1])
if (invokedDirectly) {
  serve().catch((err: unknown) => {
    // Described, not quoted: a database's own error text says nothing useful to whoever starts the service.
    process.stderr.write(`arbiter: failed to start: ${describeCliFailure(err).message}\n`)
    process.exit(1)
  })
}
