import { z } from 'zod'
import { isValidKeyName } from './log/transparency.ts'
import { hostPatternProblem } from './probes/ssrf-guard.ts'

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
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
})

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
  bodyLimitBytes: number
  dbPoolMax: number
  /** Requests per key per minute; 0 disables rate limiting. */
  rateLimitPerMinute: number
  /** At most one background checkpoint per interval while the log grows. */
  checkpointIntervalMs: number
  /** How long the audit log's sequencer lets entries gather after a batch that was not full (0 to 1000). */
  sequencerLingerMs: number
  /** The checkpoint origin; unset means `arbiter.local/log/<log id>`. */
  logOrigin: string | undefined
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL']
  /** On SIGTERM, how long in-flight requests may take before their connections are closed. */
  shutdownGraceMs: number
}

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
    bodyLimitBytes: e.ARBITER_BODY_LIMIT_BYTES,
    dbPoolMax: e.ARBITER_DB_POOL_MAX,
    rateLimitPerMinute: e.ARBITER_RATE_LIMIT_PER_MINUTE,
    checkpointIntervalMs: e.ARBITER_CHECKPOINT_INTERVAL_MS,
    sequencerLingerMs: e.ARBITER_SEQUENCER_LINGER_MS,
    logOrigin: e.ARBITER_LOG_ORIGIN,
    logLevel: e.LOG_LEVEL,
    shutdownGraceMs: e.ARBITER_SHUTDOWN_GRACE_MS,
  })
}
