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
  concurrency: number
  /** LISTEN for new deliveries (PostgreSQL); otherwise only poll. */
  listen: boolean
  /** Run the delivery worker on this app (default true). */
  deliver: boolean
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
  concurrency: 16,
  listen: false,
  deliver: true,
}
