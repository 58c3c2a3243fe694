import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { createPool, type Pool } from '../../db/pool.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The pg pool; every repository call takes it (or a transaction client) as its first argument. */
    db: Pool
  }
}

export interface DbPluginOptions {
  connectionString: string
  poolMax: number
}

async function dbPlugin(app: FastifyInstance, options: DbPluginOptions) {
  const pool = createPool({
    connectionString: options.connectionString,
    max: options.poolMax,
    onError: (err) => app.log.warn({ err: { message: err.message } }, 'idle database connection lost'),
  })
  app.decorate('db', pool)
  app.addHook('onClose', async () => {
    await pool.end()
  })
}

export default fp(dbPlugin, { name: 'arbiter-db' })
