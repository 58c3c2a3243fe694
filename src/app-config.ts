import type { SequencerTiming } from './audit-log/sequencer/sequencer.ts'
import type { Config } from './config.ts'
import type { KeyCacheMode } from './services/key-cache.ts'
import type { WebhookAppSettings } from './webhooks/settings.ts'

/** What the app needs; `runtime.ts` and tests build it, the app itself never reads the environment. */
export interface AppConfig
  extends Pick<
    Config,
    'bodyLimitBytes' | 'dbPoolMax' | 'rateLimitPerMinute' | 'probeAllowedHosts' | 'probeAllowPrivate'
  > {
  connectionString: string
  /** Environment probe headers `{env: NAME}` read from at call time (the process env in production). */
  probeEnv: Record<string, string | undefined>
  /** Manifest stream: how often new manifests are looked for, and the heartbeat interval. */
  ssePollMs?: number
  sseHeartbeatMs?: number
  /** Unknown or revoked keys per client address per minute before 429; 0 off (default 60). */
  authFailuresPerMinute?: number
  /** Which peers may name the client in X-Forwarded-For (src/trust-proxy.ts); default false, none. */
  trustProxy?: Config['trustProxy']
  /** Open manifest streams this replica serves before it answers 503 (default 1,000). */
  sseMaxStreams?: number
  /** A request must arrive whole within this (slow clients are cut off with 408); default 30 s. */
  requestTimeoutMs?: number
  /** Load shedding (503 + Retry-After) instead of unbounded queues; defaults suit production. */
  overload?: Partial<OverloadLimits>
  /** At most one background checkpoint per interval while the log grows (default 1000 ms). */
  checkpointIntervalMs?: number
  /** The checkpoint origin; default `arbiter.local/log/<log id>`. */
  logOrigin?: string | undefined
  /** Sequencer timing (lease, polling, batch size); defaults suit production, tests shorten them. */
  sequencer?: Partial<SequencerTiming>
  /**
   * How API keys are cached (services/key-cache.ts): 'listen' across replicas on PostgreSQL, 'local' for the
   * embedded database (one process), 'off' (default) reads every key.
   */
  keyCache?: KeyCacheMode
  /**
   * Prepare the hot statements once per connection (src/db/statement.ts); default true. On the embedded database
   * too: its wire server gives each connection names of its own in the one session it serves, drops them when
   * the connection leaves, and its maintenance analyzes the tables as they grow, which makes PostgreSQL plan
   * prepared statements again.
   */
  namedStatements?: boolean
  /** Webhooks: the SSRF policy of their URLs, retries and disabling, and delivery timings tests shorten. */
  webhooks?: Partial<WebhookAppSettings>
}

export interface OverloadLimits {
  /** Shed when the event loop lags more than this (ms). */
  maxEventLoopDelayMs: number
  /** Shed when the V8 heap exceeds this (bytes); 0 disables. */
  maxHeapUsedBytes: number
  /** Shed when more requests than this already wait for a database connection. */
  maxDbWaiting: number
  /** A request that waits longer than this for a database connection fails with 503 (ms). */
  maxDbWaitMs: number
}

export const DEFAULT_OVERLOAD: OverloadLimits = {
  maxEventLoopDelayMs: 1000,
  maxHeapUsedBytes: 768 * 1024 * 1024,
  maxDbWaiting: 256,
  maxDbWaitMs: 5000,
}
