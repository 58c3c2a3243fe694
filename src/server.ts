import { ConfigError, loadConfig } from './config.ts'
import { loggerOptions } from './logger.ts'
import { startRuntime } from './runtime.ts'
import { ensureAdminKey } from './services/keys.ts'

/** The process: config, logger, listen, graceful shutdown. The app itself never touches the process. */
export async function serve(): Promise<void> {
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
  // A person at a terminal reads lines; anything else (a file, a collector) gets one JSON object per line.
  const runtime = await startRuntime(
    config,
    loggerOptions(config, { pretty: process.stdout.isTTY === true }),
    process.env,
  )
  const { app } = runtime

  const admin = await ensureAdminKey(app.services, config.bootstrapAdminKey)
  if (admin.created === 'generated') {
    // Printed once, on stdout, never logged: this is the only time the secret exists outside its hash.
    process.stdout.write(
      `\nNo admin key existed, so one was created. Store it now; it will not be shown again:\n\n  ${admin.key}\n\n`,
    )
  }

  let closing = false
  const shutdown = async (signal: string) => {
    if (closing) {
      app.log.warn({ signal }, 'second signal: exiting now')
      process.exit(1)
    }
    closing = true
    app.log.info({ signal }, 'shutting down: no new connections, finishing in-flight requests')
    try {
      await runtime.close()
      process.exit(0)
    } catch (err) {
      app.log.error({ err }, 'shutdown failed')
      process.exit(1)
    }
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))

  await app.listen({ port: config.port, host: config.host })
}

const invokedDirectly =
  process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))
if (invokedDirectly) {
  serve().catch((err: unknown) => {
    process.stderr.write(`arbiter: failed to start: ${(err as Error).message}\n`)
    process.exit(1)
  })
}
