import { randomUUID } from 'node:crypto'
import { availableParallelism } from 'node:os'
import rateLimit from '@fastify/rate-limit'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import underPressure from '@fastify/under-pressure'
import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod'
import type { Config } from './config.ts'
import type { SigningKey } from './crypto/signing-key.ts'
import { type Migration, migrate, readMigrations } from './db/migrate.ts'
import { createPool } from './db/pool.ts'
import { AppError } from './errors.ts'
import { sendProblem, toProblem } from './http/errors.ts'
import { assertAcceptableJson } from './http/json-guard.ts'
import authPlugin from './http/plugins/auth.ts'
import dbPlugin from './http/plugins/db.ts'
import errorsPlugin from './http/plugins/errors.ts'
import metricsPlugin from './http/plugins/metrics.ts'
import { auditRoutes } from './http/routes/audit.ts'
import { healthRoutes } from './http/routes/health.ts'
import { keyRoutes } from './http/routes/keys.ts'
import { logRoutes } from './http/routes/log.ts'
import { manifestRoutes } from './http/routes/manifests.ts'
import { outcomeRoutes } from './http/routes/outcomes.ts'
import { probeRoutes } from './http/routes/probes.ts'
import type { SequencerTiming } from './log/sequencer.ts'
import { VerifiableLog } from './log/verifiable-log.ts'
import type { ServiceContext } from './services/context.ts'
import { registerSigningKey } from './services/signing.ts'

declare module 'fastify' {
  interface FastifyInstance {
    config: AppConfig
    signingKey: SigningKey
    /** What the use cases in src/services need, in one object. */
    services: ServiceContext
  }
}

/** What the app needs; `server.ts` and tests build it, the app itself never reads the environment. */
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
  /** A request must arrive whole within this (slow clients are cut off with 408); default 30 s. */
  requestTimeoutMs?: number
  /** At most one background checkpoint per interval while the log grows (default 1000 ms). */
  checkpointIntervalMs?: number
  /** The checkpoint origin; default `arbiter.local/log/<log id>`. */
  logOrigin?: string | undefined
  /** Sequencer timing (lease, polling, batch size); defaults suit production, tests shorten them. */
  sequencer?: Partial<SequencerTiming>
  /** Load shedding (503 + Retry-After) instead of unbounded queues; defaults suit production. */
  overload?: Partial<OverloadLimits>
}

export interface OverloadLimits {
  /** Shed when the event loop lags more than this (ms). */
  maxEventLoopDelayMs: number
  /** Shed when the V8 heap exceeds this (bytes); 0 disables. */
  maxHeapUsedBytes: number
  /** Shed when more requests than this already wait for a database connection. */
  maxDbWaiting: number
}

const DEFAULT_OVERLOAD: OverloadLimits = {
  maxEventLoopDelayMs: 1000,
  maxHeapUsedBytes: 768 * 1024 * 1024,
  maxDbWaiting: 256,
}

export interface AppOptions {
  config: AppConfig
  signingKey: SigningKey
  logger?: FastifyServerOptions['logger']
  /** Apply pending migrations while building (default true). */
  migrate?: boolean
}

export const LOG_REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.headers.authorization',
  'key',
  '*.key',
  'secret',
  '*.secret',
]

const REQUEST_ID = /^[\w.:-]{1,128}$/

// Matched by route, not raw URL, so no spelling of a path evades the check. Liveness, readiness and metrics
// must answer under load; the manifest stream is long-lived and would hold an admission slot for good.
const OPERATIONS_ROUTES = new Set(['/healthz', '/readyz', '/metrics'])
const routeOf = (request: FastifyRequest) => request.routeOptions.url ?? ''
const isOperationsRoute = (request: FastifyRequest) => OPERATIONS_ROUTES.has(routeOf(request))
const isUncountedRoute = (request: FastifyRequest) =>
  isOperationsRoute(request) || routeOf(request) === '/v1/manifests/stream'

/** Worker threads for `audit verify` on large logs: one per core, at most four. */
export function verifyWorkers(): number {
  return Math.max(1, Math.min(4, availableParallelism()))
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config } = options
  const requestTimeoutMs = config.requestTimeoutMs ?? 30_000
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: config.bodyLimitBytes,
    // Slow clients are cut off: the whole request must arrive within requestTimeoutMs (408), idle keep-alive
    // sockets close at 65 s. Node checks for expired requests every connectionsCheckingInterval, so that interval
    // follows the timeout; otherwise a 30 s timeout could take up to 60 s to bite.
    requestTimeout: requestTimeoutMs,
    http: { connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(requestTimeoutMs / 10))) },
    connectionTimeout: 0,
    keepAliveTimeout: 65_000,
    // Router errors (a malformed %-escape, an overlong path parameter) are problems like any other.
    frameworkErrors: (err, request, reply) => sendProblem(reply, toProblem(err, request)),
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
  }).withTypeProvider<ZodTypeProvider>()

  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(serializerCompiler)
  app.decorate('config', config)
  app.decorate('signingKey', options.signingKey)

  // An empty body with a JSON content type means "no body" (e.g. `POST .../evaluate`); the rest is the stock parser.
  // JSON is the only body type (SPEC §2): anything else is a 415, not a confusing validation error.
  app.removeAllContentTypeParsers()
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.addContentTypeParser(
    ['application/json', 'application/problem+json'],
    { parseAs: 'string' },
    (request, body, done) => {
      if (body === '') return done(null, undefined)
      parseJson(request, body as string, (err, parsed) => {
        if (err) return done(err)
        try {
          assertAcceptableJson(parsed)
        } catch (guardErr) {
          return done(guardErr as Error)
        }
        done(null, parsed)
      })
    },
  )
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })
  // Query strings are text columns' filters: U+0000 can never match and PostgreSQL refuses it, so say so.
  app.addHook('preValidation', async (request) => {
    const query = request.query as Record<string, unknown> | undefined
    for (const [name, value] of Object.entries(query ?? {})) {
      if (
        (Array.isArray(value) ? value : [value]).some((v) => typeof v === 'string' && v.includes('\u0000'))
      ) {
        throw new AppError('VALIDATION', `querystring/${name}: must not contain U+0000`, {}, [
          { path: `querystring/${name}`, message: 'must not contain U+0000' },
        ])
      }
    }
  })

  // 1. External and shared plugins, in dependency order.
  await app.register(errorsPlugin)
  await app.register(dbPlugin, { connectionString: config.connectionString, poolMax: config.dbPoolMax })
  const migrations: Migration[] = await readMigrations()
  if (options.migrate !== false) await migrate(app.db, migrations)
  await registerSigningKey(app.db, options.signingKey)
  const sequencerDb = createPool({
    connectionString: config.connectionString,
    max: 1,
    onError: (err) => app.log.warn({ err: { message: err.message } }, 'audit sequencer connection lost'),
  })
  const auditLog = await VerifiableLog.open(app.db, options.signingKey, {
    origin: config.logOrigin,
    checkpointIntervalMs: config.checkpointIntervalMs ?? 1_000,
    sequencer: config.sequencer,
    sequencerDb,
    parallelVerify: { connectionString: config.connectionString, workers: verifyWorkers() },
    onError: (err) => app.log.warn({ err }, 'audit sequencer batch failed; retrying'),
  })
  auditLog.start()
  // onClose hooks run last-registered first: the sequencer stops (and hands its lease over) before the pools close.
  app.addHook('onClose', async () => {
    await auditLog.stop()
    await sequencerDb.end()
  })
  await app.register(metricsPlugin)
  const overload = { ...DEFAULT_OVERLOAD, ...config.overload }
  const shed = (reason: string) =>
    new AppError('OVERLOADED', `the service is shedding load (${reason}); retry later`)
  await app.register(underPressure, {
    maxEventLoopDelay: overload.maxEventLoopDelayMs,
    maxHeapUsedBytes: overload.maxHeapUsedBytes,
    // Liveness, readiness and metrics stay answerable under load; everything else is shed with a 503 problem.
    pressureHandler: async (request, _reply, type) => {
      if (!isOperationsRoute(request)) throw shed(type)
    },
  })
  // Admission control, counted synchronously: pg's waitingCount only grows once a request reaches the pool, so
  // a burst arriving in one event-loop turn would all pass a check on it alone. Long-lived streams are not
  // counted (they would hold a slot for good).
  let admitted = 0
  app.addHook('onRequest', async (request, reply) => {
    if (isUncountedRoute(request)) return
    if (app.db.waitingCount > overload.maxDbWaiting || admitted >= config.dbPoolMax + overload.maxDbWaiting) {
      throw shed('database queue full')
    }
    admitted += 1
    // Released once, when the response closes or the socket does: a pipelined request queued behind others
    // never gets its own 'close' if the client hangs up first.
    const socket = request.raw.socket
    let released = false
    const release = () => {
      if (released) return
      released = true
      admitted -= 1
      socket?.off('close', release)
    }
    reply.raw.once('close', release)
    socket?.once('close', release)
  })
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Arbiter',
        version: '0.1.0',
        description:
          'Settles disagreements between AI orchestrators sharing a sub-agent: evidence, interpretations, a written decision procedure, ground-truth probes and one signed manifest.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
  await app.register(authPlugin)
  if (config.rateLimitPerMinute > 0) {
    await app.register(rateLimit, {
      global: true,
      hook: 'preHandler',
      max: config.rateLimitPerMinute,
      timeWindow: 60_000,
      // Per API key; public routes are not limited (they carry no key and do no work worth limiting).
      keyGenerator: (request) => request.principal?.keyId ?? request.ip,
      allowList: (request) => request.principal === null,
      errorResponseBuilder: (_request, context) => ({
        statusCode: 429,
        message: `rate limit of ${context.max} requests per minute exceeded; retry in ${context.after}`,
      }),
    })
  }

  app.decorate('services', {
    db: app.db,
    signingKey: options.signingKey,
    metrics: app.metrics,
    log: app.log,
    auditLog,
    probes: {
      policy: { allowedHosts: config.probeAllowedHosts, allowPrivate: config.probeAllowPrivate },
      env: config.probeEnv,
    },
  } satisfies ServiceContext)

  // 2. Routes.
  await app.register(healthRoutes, { migrations })
  await app.register(keyRoutes)
  await app.register(outcomeRoutes)
  await app.register(probeRoutes)
  await app.register(auditRoutes)
  await app.register(logRoutes)
  await app.register(manifestRoutes, {
    ssePollMs: config.ssePollMs ?? 500,
    sseHeartbeatMs: config.sseHeartbeatMs ?? 15_000,
  })
  app.get('/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () => app.swagger())

  await app.ready()
  return app
}
