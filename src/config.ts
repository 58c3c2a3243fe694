import { z } from 'zod'
import { isValidKeyName } from './audit-log/core/transparency.ts'
import { hostPatternProblem } from './probes/ssrf-guard.ts'
import { parseTrustProxy, type TrustProxy } from './trust-proxy.ts'

/**
 * The only reader of `process.env`. Parsed once at start; a bad value stops start-up with one line naming
 * the variable.
 */
const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'expected true or false' })
  .transform((value) => value === 'true' || value === '1' || value === 'yes')

const commaList = z.string().transform((value) =>
  value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0),
)

/**
 * A comma list of host patterns (exact names, `*.example.com`, IP literals): an entry that is a URL or carries a
 * port or path would match no host, so it stops start-up instead of refusing every call in silence.
 */
const hostPatternList = commaList.superRefine((patterns, ctx) => {
  for (const pattern of patterns) {
    const problem = hostPatternProblem(pattern)
    if (problem !== null) {
      ctx.addIssue({
        code: 'custom',
        message: `${problem}; expected a comma list of host names (ledger.example.com), *.example.com or IP literals`,
      })
      return
    }
  }
})

/** ARBITER_TRUST_PROXY (src/trust-proxy.ts): a value that would trust the wrong peers stops start-up. */
const trustProxy = z.string().transform((value, ctx): TrustProxy => {
  const parsed = parseTrustProxy(value)
  if ('trustProxy' in parsed) return parsed.trustProxy
  ctx.addIssue({ code: 'custom', message: parsed.problem })
  return z.NEVER
})

const httpUrl = z.string().refine((value) => {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol)
  } catch {
    return false
  }
}, 'expected an http:// or https:// URL')

// The samplers every OpenTelemetry SDK knows (OTEL_TRACES_SAMPLER); a typo stops start-up instead of tracing all.
const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const

// OTLP over HTTP only (Arbiter sends JSON; collectors take it on the same port as protobuf).
const otlpProtocol = z.enum(['http/json', 'http/protobuf'], {
  message: 'Arbiter exports OTLP over HTTP only: expected http/json or http/protobuf',
})

const port = z.coerce.number({ message: 'expected a port number' }).int().min(0).max(65535)

const envSchema = z.object({
  PORT: port.default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'expected a postgres:// connection string')
    .optional(),
  ARBITER_DATA_DIR: z.string().min(1).default('./.arbiter'),
  ARBITER_SIGNING_KEY: z.string().min(1).optional(),
  ARBITER_BOOTSTRAP_ADMIN_KEY: z.string().min(24, 'must be at least 24 characters').optional(),
  ARBITER_PROBE_ALLOWED_HOSTS: hostPatternList.default([]),
  ARBITER_PROBE_ALLOW_PRIVATE: booleanFlag.default(false),
  ARBITER_WEBHOOK_ALLOWED_HOSTS: hostPatternList.default([]),
  ARBITER_WEBHOOK_ALLOW_PRIVATE: booleanFlag.default(false),
  ARBITER_WEBHOOK_MAX_AGE_HOURS: z.coerce
    .number({ message: 'expected a number of hours' })
    .positive()
    .default(24),
  ARBITER_WEBHOOK_DISABLE_AFTER_HOURS: z.coerce
    .number({ message: 'expected a number of hours' })
    .positive()
    .default(72),
  ARBITER_WEBHOOK_RETENTION_HOURS: z.coerce
    .number({ message: 'expected a number of hours' })
    .positive()
    .default(168),
  // For tests of the retry mechanism: the delays after the 1st, 2nd, … failure (the last repeated).
  ARBITER_WEBHOOK_RETRY_SCHEDULE_MS: commaList
    .transform((parts) => parts.map(Number))
    .pipe(z.array(z.number().int().min(1)).min(1, 'expected a comma list of milliseconds'))
    .optional(),
  // For tests of a replica killed mid-delivery: one attempt's bound (a claimed delivery's lease is 1 s longer).
  ARBITER_WEBHOOK_ATTEMPT_TIMEOUT_MS: z.coerce
    .number({ message: 'expected a number of milliseconds' })
    .int()
    .min(100)
    .max(10_000)
    .default(10_000),
  ARBITER_BODY_LIMIT_BYTES: z.coerce
    .number({ message: 'expected a byte count' })
    .int()
    .min(1024)
    .default(1048576),
  ARBITER_DB_POOL_MAX: z.coerce.number({ message: 'expected a pool size' }).int().min(1).max(200).default(10),
  ARBITER_RATE_LIMIT_PER_MINUTE: z.coerce
    .number({ message: 'expected a request count' })
    .int()
    .min(0)
    .default(6000),
  ARBITER_AUTH_FAILURES_PER_MINUTE: z.coerce
    .number({ message: 'expected a request count' })
    .int()
    .min(0)
    .default(60),
  ARBITER_TRUST_PROXY: trustProxy.default(false),
  ARBITER_CHECKPOINT_INTERVAL_MS: z.coerce
    .number({ message: 'expected a number of milliseconds' })
    .int()
    .min(1)
    .default(1000),
  // The sequencer renews its lease every second, and not while it lingers: a linger stays within that.
  ARBITER_SEQUENCER_LINGER_MS: z.coerce
    .number({ message: 'expected a number of milliseconds' })
    .int()
    .min(0)
    .max(1000)
    .default(20),
  // The origin names the log in every checkpoint and is the note key's name: one line, no spaces, no '+'.
  ARBITER_LOG_ORIGIN: z
    .string()
    .refine(isValidKeyName, 'expected a log name without spaces or "+" (e.g. example.com/arbiter/log)')
    .optional(),
  ARBITER_SHUTDOWN_GRACE_MS: z.coerce
    .number({ message: 'expected a number of milliseconds' })
    .int()
    .min(0)
    .default(10000),
  OTEL_SDK_DISABLED: booleanFlag.default(false),
  OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none'], { message: 'expected otlp or none' }).default('otlp'),
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('arbiter'),
  OTEL_TRACES_SAMPLER: z.enum(SAMPLERS, { message: `expected one of ${SAMPLERS.join(', ')}` }).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
})

/** Where and as what spans are exported; absent when tracing is off. */
export interface TracingConfig {
  /** The OTLP/HTTP traces URL (`…/v1/traces`). */
  tracesEndpoint: string
  serviceName: string
}

export interface Config {
  port: number
  host: string
  /** Set when an external PostgreSQL is used; unset means the embedded one. */
  databaseUrl: string | undefined
  dataDir: string
  signingKey: string | undefined
  bootstrapAdminKey: string | undefined
  probeAllowedHosts: string[]
  probeAllowPrivate: boolean
  webhookAllowedHosts: string[]
  webhookAllowPrivate: boolean
  /** A webhook delivery still failing after this long is failed. */
  webhookMaxAgeMs: number
  /** A webhook whose every attempt failed for this long is disabled. */
  webhookDisableAfterMs: number
  /** Settled webhook deliveries older than this are deleted, and events left without deliveries. */
  webhookRetentionMs: number
  /** The retry delays of webhook deliveries; unset means the production schedule (a test knob). */
  webhookRetryScheduleMs: number[] | undefined
  /** One delivery attempt's bound, 10 s (a test knob may shorten it). */
  webhookAttemptTimeoutMs: number
  bodyLimitBytes: number
  dbPoolMax: number
  /** Requests per key per minute; 0 disables rate limiting. */
  rateLimitPerMinute: number
  /** Unknown or revoked keys per client address per minute before 429; 0 disables. */
  authFailuresPerMinute: number
  /** Which peers may name the client in X-Forwarded-For (fastify's trustProxy); false: none. */
  trustProxy: TrustProxy
  /** At most one background checkpoint per interval while the log grows. */
  checkpointIntervalMs: number
  /** How long the audit log's sequencer lets entries gather after a batch that was not full (0 to 1000). */
  sequencerLingerMs: number
  /** The checkpoint origin; unset means `arbiter.local/log/<log id>`. */
  logOrigin: string | undefined
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL']
  /** On SIGTERM, how long in-flight requests may take before their connections are closed. */
  shutdownGraceMs: number
  /** Set when an OTLP endpoint is configured (and the SDK not disabled): tracing on. */
  tracing: TracingConfig | undefined
}

const HOUR_MS = 3_600_000

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Parses the environment; throws ConfigError whose message is one line naming the variable. */
export function loadConfig(env: Record<string, string | undefined>): Readonly<Config> {
  // Empty strings mean "unset" (a common result of `VAR= npm start` or compose files).
  const present = Object.fromEntries(
    Object.entries(env).filter(([, value]) => value !== undefined && value !== ''),
  )
  const parsed = envSchema.safeParse(present)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    const variable = String(issue.path[0] ?? 'environment')
    throw new ConfigError(`invalid ${variable}: ${issue.message}`)
  }
  const e = parsed.data
  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    dataDir: e.ARBITER_DATA_DIR,
    signingKey: e.ARBITER_SIGNING_KEY,
    bootstrapAdminKey: e.ARBITER_BOOTSTRAP_ADMIN_KEY,
    probeAllowedHosts: e.ARBITER_PROBE_ALLOWED_HOSTS,
    probeAllowPrivate: e.ARBITER_PROBE_ALLOW_PRIVATE,
    webhookAllowedHosts: e.ARBITER_WEBHOOK_ALLOWED_HOSTS,
    webhookAllowPrivate: e.ARBITER_WEBHOOK_ALLOW_PRIVATE,
    webhookMaxAgeMs: Math.round(e.ARBITER_WEBHOOK_MAX_AGE_HOURS * HOUR_MS),
    webhookDisableAfterMs: Math.round(e.ARBITER_WEBHOOK_DISABLE_AFTER_HOURS * HOUR_MS),
    webhookRetentionMs: Math.round(e.ARBITER_WEBHOOK_RETENTION_HOURS * HOUR_MS),
    webhookRetryScheduleMs: e.ARBITER_WEBHOOK_RETRY_SCHEDULE_MS,
    webhookAttemptTimeoutMs: e.ARBITER_WEBHOOK_ATTEMPT_TIMEOUT_MS,
    bodyLimitBytes: e.ARBITER_BODY_LIMIT_BYTES,
    dbPoolMax: e.ARBITER_DB_POOL_MAX,
    rateLimitPerMinute: e.ARBITER_RATE_LIMIT_PER_MINUTE,
    authFailuresPerMinute: e.ARBITER_AUTH_FAILURES_PER_MINUTE,
    trustProxy: e.ARBITER_TRUST_PROXY,
    checkpointIntervalMs: e.ARBITER_CHECKPOINT_INTERVAL_MS,
    sequencerLingerMs: e.ARBITER_SEQUENCER_LINGER_MS,
    logOrigin: e.ARBITER_LOG_ORIGIN,
    logLevel: e.LOG_LEVEL,
    shutdownGraceMs: e.ARBITER_SHUTDOWN_GRACE_MS,
    tracing: tracingConfig(e),
  })
}

/**
 * Tracing is on when an OTLP endpoint is set, unless OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none says
 * otherwise. OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the traces URL as is; OTEL_EXPORTER_OTLP_ENDPOINT is a base
 * that `/v1/traces` is appended to (the OpenTelemetry rules for both).
 */
function tracingConfig(e: z.infer<typeof envSchema>): TracingConfig | undefined {
  if (e.OTEL_SDK_DISABLED || e.OTEL_TRACES_EXPORTER === 'none') return undefined
  const tracesEndpoint =
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (e.OTEL_EXPORTER_OTLP_ENDPOINT === undefined
      ? undefined
      : `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`)
  if (tracesEndpoint === undefined) return undefined
  return { tracesEndpoint, serviceName: e.OTEL_SERVICE_NAME }
}
