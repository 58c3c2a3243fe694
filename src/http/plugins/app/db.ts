import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { createPool, type Pool } from '../../../db/pool.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The pg pool. Services reach it through `app.services`; plugins that watch the pool read it here. */
    db: Pool
  }
}

export interface DbPluginOptions {
  /** How long a request may wait for a connection before it fails with 503. */
  connectionTimeoutMs: number
}

/** Opens the pool the app's config names (it connects lazily: building the app touches no database). */
async function dbPlugin(app: FastifyInstance, options: DbPluginOptions) {
  const pool = createPool({
    connectionString: app.config.connectionString,
    max: app.config.dbPoolMax,
    connectionTimeoutMillis: options.connectionTimeoutMs,
    namedStatements: app.config.namedStatements ?? true,
    onError: (err) => app.log.warn({ err: { message: err.message } }, 'idle database connection lost'),
  })
  app.decorate('db', pool)
  app.addHook('onClose', async () => {
    await pool.end()
  })
}

export default fp(dbPlugin, { name: 'arbiter-db', dependencies: ['arbiter-settings'] })
