import type { HostLookup } from '../probes/ssrf-guard.ts'

/** The webhook settings an app is built with: what the environment sets, and timings tests shorten. */
export interface WebhookAppSettings {
  /** ARBITER_WEBHOOK_ALLOWED_HOSTS: empty allows any host. */
  allowedHosts: string[]
  /** ARBITER_WEBHOOK_ALLOW_PRIVATE. */
  allowPrivate: boolean
  maxAgeMs: number
  disableAfterMs: number
  /** Unset: the production schedule (about 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 2 h). */
  retryScheduleMs: readonly number[] | undefined
  attemptTimeoutMs: number
  leaseMs: number
  /** Unset: 1 s when listening, 250 ms otherwise. */
  pollMs: number | undefined
  /** How often a worker idle for want of an enabled webhook looks again anyway. */
  idleCheckMs: number
  concurrency: number
  /** LISTEN for new deliveries (PostgreSQL); otherwise only poll. */
  listen: boolean
  /**
   * The database serves this process alone (the embedded database): a webhook created or enabled here wakes this
   * worker directly, so it waits without polling while no webhook is enabled, as a listening worker does.
   */
  soleProcess: boolean
  /** Run the delivery worker on this app (default true). */
  deliver: boolean
  /** Connections of the worker's own pool (its LISTEN connection aside): never the requests' connections. */
  poolMax: number
  /** Settled deliveries this much older than their last attempt are deleted (ARBITER_WEBHOOK_RETENTION_HOURS). */
  retentionMs: number
  /** How often the worker deletes what the retention lets go. */
  pruneIntervalMs: number
  /** Rows one pruning statement deletes at most. */
  pruneBatch: number
  /** Resolves webhook host names, at registration and at every connection (tests only; default the system's). */
  lookup: HostLookup | undefined
}

export const WEBHOOK_DEFAULTS: WebhookAppSettings = {
  allowedHosts: [],
  allowPrivate: false,
  maxAgeMs: 24 * 3_600_000,
  disableAfterMs: 72 * 3_600_000,
  retryScheduleMs: undefined,
  attemptTimeoutMs: 10_000,
  leaseMs: 30_000,
  pollMs: undefined,
  idleCheckMs: 30_000,
  concurrency: 16,
  listen: false,
  soleProcess: false,
  deliver: true,
  poolMax: 2,
  retentionMs: 168 * 3_600_000,
  pruneIntervalMs: 10 * 60_000,
  pruneBatch: 1_000,
  lookup: undefined,
}
