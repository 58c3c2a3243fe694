import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import { createPool, type Pool, type Queryable } from '../../../db/pool.ts'
import { queryOne } from '../../../db/statement.ts'
import { DEFAULT_RETRY_SCHEDULE_MS } from '../../../domain/webhooks/retry-schedule.ts'
import { type WebhookDeliverySettings, WebhookDeliveryWorker } from '../../../webhooks/delivery-worker.ts'
import { pendingDeliveriesSummary } from '../../../webhooks/repository.ts'
import type { WebhookContext } from '../../../webhooks/service.ts'
import { WEBHOOK_DEFAULTS } from '../../../webhooks/settings.ts'
import type { CaseKindModule } from '../../case-kinds.ts'
import { escalationListing } from '../../routes/escalations.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * What the webhook routes pass their services, and this replica's delivery worker with the pool of its own
     * its queries run on.
     */
    webhooks: WebhookContext & { worker: WebhookDeliveryWorker; workerDb: Pool }
  }
}

/**
 * Webhooks: the context their routes use, and this replica's delivery worker, started when the app is ready and
 * stopped before the pools close. The worker has a small pool of its own (and its LISTEN connection): its polls,
 * leases and pruning never take a connection a request waits for. Its metrics join the app's registry.
 */
export interface WebhooksPluginOptions {
  /** The case kinds served: an escalation event shows its escalation as their listing does. */
  kinds: readonly CaseKindModule[]
}

async function webhooksPlugin(app: FastifyInstance, options: WebhooksPluginOptions) {
  const given = { ...WEBHOOK_DEFAULTS, ...app.config.webhooks }
  const policy = {
    allowedHosts: given.allowedHosts,
    allowPrivate: given.allowPrivate,
    settings: {
      allowedHosts: 'ARBITER_WEBHOOK_ALLOWED_HOSTS',
      allowPrivate: 'ARBITER_WEBHOOK_ALLOW_PRIVATE',
      users: 'webhooks',
    },
  }
  const settings: WebhookDeliverySettings = {
    policy,
    maxAgeMs: given.maxAgeMs,
    disableAfterMs: given.disableAfterMs,
    retryScheduleMs: given.retryScheduleMs ?? DEFAULT_RETRY_SCHEDULE_MS,
    attemptTimeoutMs: given.attemptTimeoutMs,
    leaseMs: Math.max(given.leaseMs, given.attemptTimeoutMs + 1_000),
    pollMs: given.pollMs ?? (given.listen ? 1_000 : 250),
    idleCheckMs: given.idleCheckMs,
    concurrency: given.concurrency,
    listenConnectionString: given.listen ? app.config.connectionString : undefined,
    soleProcess: given.soleProcess,
    retentionMs: given.retentionMs,
    pruneIntervalMs: given.pruneIntervalMs,
    pruneBatch: given.pruneBatch,
    lookup: given.lookup,
    showEscalation: escalationListing(options.kinds).view,
  }
  const db = app.db
  const { attempts, deliveries, latency } = webhookMetrics(app.metrics.registry, db)
  // Opened lazily, like the request pool: an app that does not deliver never connects it. Its waits are bounded by
  // the lease: the worker holds at most `concurrency` attempts, each waiting its turn for a connection.
  const workerDb = createPool({
    connectionString: app.config.connectionString,
    max: given.poolMax,
    connectionTimeoutMillis: settings.leaseMs,
    namedStatements: app.config.namedStatements ?? true,
    onError: (err) => app.log.warn({ err: { message: err.message } }, 'idle webhook worker connection lost'),
  })
  const worker = new WebhookDeliveryWorker(
    workerDb,
    settings,
    {
      attempt: (result, seconds) => {
        attempts.inc({ result })
        latency.observe(seconds)
      },
      settled: (status) => deliveries.inc({ result: status }),
    },
    (message, err) => app.log.warn({ err }, message),
  )
  app.decorate('webhooks', { db, policy, lookup: given.lookup, wake: () => worker.wake(), worker, workerDb })
  if (given.deliver) app.addHook('onReady', async () => worker.start())
  app.addHook('onClose', async () => {
    await worker.stop()
    await workerDb.end()
  })
}

/**
 * The webhook metrics, in the app's registry: attempts and deliveries counted and timed by this replica's worker,
 * and the pending deliveries of every replica, read from the database at each scrape.
 */
function webhookMetrics(registry: Registry, db: Queryable) {
  const attempts = new Counter({
    name: 'arbiter_webhook_attempts_total',
    help: 'Webhook delivery attempts by result (success, http_error, gone, network_error, timeout, blocked)',
    labelNames: ['result'] as const,
    registers: [registry],
  })
  const deliveries = new Counter({
    name: 'arbiter_webhook_deliveries_total',
    help: 'Webhook deliveries settled on this replica, by result (succeeded, failed)',
    labelNames: ['result'] as const,
    registers: [registry],
  })
  const latency = new Histogram({
    name: 'arbiter_webhook_attempt_duration_seconds',
    help: 'Webhook delivery attempt latency, from sending to the end of the answer read',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  })
  // Both gauges come from one query per scrape: the registry collects its metrics at once, so each awaits the same
  // read rather than one showing what the other read at the scrape before.
  let summary: Promise<{ pending: number; oldest_age_seconds: number | null } | undefined> | undefined
  const readSummary = () => {
    summary ??= queryOne(db, pendingDeliveriesSummary())
      // A scrape while the database is away shows the last values rather than failing the whole page.
      .catch(() => undefined)
      .finally(() => setImmediate(() => (summary = undefined)))
    return summary
  }
  new Gauge({
    name: 'arbiter_webhook_oldest_pending_age_seconds',
    help: 'Age of the oldest pending webhook delivery (0 when none): alert when it grows',
    registers: [registry],
    async collect() {
      const read = await readSummary()
      if (read) this.set(read.oldest_age_seconds ?? 0)
    },
  })
  new Gauge({
    name: 'arbiter_webhook_deliveries_pending',
    help: 'Webhook deliveries not yet succeeded or failed, across all replicas',
    registers: [registry],
    async collect() {
      const read = await readSummary()
      if (read) this.set(read.pending)
    },
  })
  return { attempts, deliveries, latency }
}

export default fp(webhooksPlugin, {
  name: 'arbiter-webhooks',
  dependencies: ['arbiter-settings', 'arbiter-db', 'arbiter-metrics', 'arbiter-audit-log'],
})
