import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { DecisionWorkers } from '../../../engine/decision-workers.ts'
import type { ServiceContext } from '../../../services/context.ts'
import { KeyCache } from '../../../services/key-cache.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** What every service takes: routes pass it whole, so no route reaches the database itself. */
    services: ServiceContext
  }
}

async function servicesPlugin(app: FastifyInstance) {
  const keyCache = new KeyCache(app.config.keyCache ?? 'off', {
    connectionString: app.config.connectionString,
    warn: (message) => app.log.warn(message),
  })
  keyCache.start()
  const decisionWorkers = new DecisionWorkers()
  app.addHook('onClose', async () => {
    await keyCache.close()
    await decisionWorkers.close()
  })
  app.decorate('services', {
    db: app.db,
    signingKey: app.signingKey,
    auditLog: app.auditLog,
    metrics: app.metrics,
    keyCache,
    log: app.log,
    decisionWorkers,
    probes: {
      policy: { allowedHosts: app.config.probeAllowedHosts, allowPrivate: app.config.probeAllowPrivate },
      env: app.config.probeEnv,
    },
  } satisfies ServiceContext)
}

export default fp(servicesPlugin, {
  name: 'arbiter-services',
  dependencies: ['arbiter-settings', 'arbiter-db', 'arbiter-metrics', 'arbiter-audit-log'],
})
