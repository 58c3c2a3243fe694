import { randomUUID } from 'node:crypto'
import type { Server } from 'node:http'
import Fastify, { type FastifyHttpOptions, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod'
import { type AppConfig, DEFAULT_OVERLOAD } from './app-config.ts'
import { CASE_KIND_MODULES } from './cases/registry.ts'
import type { SigningKey } from './crypto/signing-key.ts'
import { type CaseKindModule, sharedCaseSchemas } from './http/case-kinds.ts'
import { clientErrorHandler, trackResponses } from './http/client-errors.ts'
import { sendProblem, toProblem } from './http/errors.ts'
import admissionPlugin from './http/plugins/app/admission.ts'
import auditLogPlugin from './http/plugins/app/audit-log.ts'
import authPlugin from './http/plugins/app/auth.ts'
import dbPlugin from './http/plugins/app/db.ts'
import errorsPlugin from './http/plugins/app/errors.ts'
import jsonBodyPlugin from './http/plugins/app/json-body.ts'
import matchedRoutePlugin from './http/plugins/app/matched-route.ts'
import metricsPlugin from './http/plugins/app/metrics.ts'
import requestGuardsPlugin from './http/plugins/app/request-guards.ts'
import requestLogPlugin, { OneLinePerRequest } from './http/plugins/app/request-log.ts'
import servicesPlugin from './http/plugins/app/services.ts'
import settingsPlugin from './http/plugins/app/settings.ts'
import traceRoutePlugin from './http/plugins/app/trace-route.ts'
import webhooksPlugin from './http/plugins/app/webhooks.ts'
import rateLimitPlugin from './http/plugins/external/rate-limit.ts'
import swaggerPlugin from './http/plugins/external/swagger.ts'
import underPressurePlugin from './http/plugins/external/under-pressure.ts'
import { clientRequestIdOf } from './http/request-id.ts'
import { RequestLogger } from './http/request-logger.ts'
import { responseSerializerCompiler } from './http/response-serializer.ts'
import { auditRoutes } from './http/routes/audit.ts'
import { escalationRoutes } from './http/routes/escalations.ts'
import { healthRoutes } from './http/routes/health.ts'
import { keyRoutes } from './http/routes/keys.ts'
import { logRoutes } from './http/routes/log.ts'
import { manifestRoutes } from './http/routes/manifests.ts'
import { probeRoutes } from './http/routes/probes.ts'
import { webhookRoutes } from './http/routes/webhooks.ts'

export type { AppConfig, OverloadLimits } from './app-config.ts'

export interface AppOptions {
  config: AppConfig
  signingKey: SigningKey
  logger?: FastifyServerOptions['logger']
  /** Case kinds served beside the registered ones (tests add a kind of their own). */
  extraCaseKinds?: readonly CaseKindModule[]
}

function serverOptions(options: AppOptions): FastifyHttpOptions<Server> {
  const requestTimeoutMs = options.config.requestTimeoutMs ?? 30_000
  return {
    logger: options.logger ?? false,
    // One line per request, written when it ends (src/http/plugins/app/request-log.ts), not fastify's two.
    logController: new OneLinePerRequest(),
    bodyLimit: options.config.bodyLimitBytes,
    // The client address (request.ip, by which failed authentication is counted) behind a reverse proxy.
    trustProxy: options.config.trustProxy ?? false,
    requestTimeout: requestTimeoutMs,
    // Slow clients are cut off: the whole request, headers and body, must arrive within requestTimeoutMs (408,
    // connection closed); idle keep-alive sockets close at 65 s. The timeouts go to node's http server when it is
    // created: set only afterwards (as fastify does), node 20 enforces them on headers but never on bodies.
    // Node checks for expired requests every connectionsCheckingInterval, so that interval follows the timeout;
    // otherwise a 30 s timeout could take up to 60 s to bite.
    http: {
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(requestTimeoutMs / 10))),
    },
    connectionTimeout: 0,
    keepAliveTimeout: 65_000,
    // Errors met before a request exists (timeouts, oversized headers, broken HTTP) are problems too.
    clientErrorHandler: clientErrorHandler(requestTimeoutMs),
    // Router errors (a malformed %-escape, an overlong path parameter) are problems like any other.
    frameworkErrors: (err, request, reply) => sendProblem(reply, toProblem(err, request)),
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // The log's request id is always Arbiter's own: a client's x-request-id is logged beside it, never as it, so
    // no client can make two requests share an id in the logs.
    genReqId: () => randomUUID(),
    // Every schema is zod's: bodies are checked by fastify-type-provider-zod, responses written by a serializer
    // compiled from their schemas (src/http/response-serializer.ts); given as the factories, fastify never loads its
    // default compilers (ajv and fast-json-stringify, about a hundred modules held in memory for nothing).
    schemaController: {
      compilersFactory: {
        // Typed for ajv; fastify calls them with the route schema, which the zod compilers take.
        buildValidator: (() => validatorCompiler) as never,
        buildSerializer: (() => responseSerializerCompiler) as never,
      },
    },
    childLoggerFactory: (logger, bindings, childOptions, rawRequest) => {
      const clientRequestId = clientRequestIdOf(rawRequest.headers)
      const requestBindings = clientRequestId === undefined ? bindings : { ...bindings, clientRequestId }
      // No route sets a log level or serializers, so the options are empty, and the child is made only if the
      // request logs something (src/http/request-logger.ts). A route with options of its own gets its child.
      if (Object.keys(childOptions).length > 0) return logger.child(requestBindings, childOptions)
      return new RequestLogger(logger, requestBindings)
    },
  }
}

/**
 * Builds the whole app: external plugins, then the app's own, then routes. It reads no environment and changes no
 * schema (migrations and the signing key's registration are the runtime's, `runtime.ts`); the one thing it runs in
 * the background is the audit log's sequencer (src/log/), which only the replica holding its lease drives.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config } = options
  const overload = { ...DEFAULT_OVERLOAD, ...config.overload }
  const app = Fastify(serverOptions(options)).withTypeProvider<ZodTypeProvider>()
  trackResponses(app.server)
  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(responseSerializerCompiler)

  const kinds = [...CASE_KIND_MODULES, ...(options.extraCaseKinds ?? [])]
  // 1. External plugins (after the request's slot for its route, which only contexts made later inherit).
  await app.register(matchedRoutePlugin)
  await app.register(traceRoutePlugin)
  await app.register(swaggerPlugin, { kinds })
  await app.register(underPressurePlugin, overload)
  await app.register(rateLimitPlugin, { perMinute: config.rateLimitPerMinute })

  // 2. The app's own plugins, each one job; decorators declare what they depend on.
  await app.register(settingsPlugin, { config, signingKey: options.signingKey })
  await app.register(errorsPlugin)
  await app.register(jsonBodyPlugin)
  await app.register(requestGuardsPlugin)
  await app.register(requestLogPlugin)
  await app.register(dbPlugin, { connectionTimeoutMs: overload.maxDbWaitMs })
  await app.register(metricsPlugin)
  await app.register(admissionPlugin, { maxDbWaiting: overload.maxDbWaiting })
  await app.register(auditLogPlugin)
  await app.register(servicesPlugin)
  await app.register(webhooksPlugin, { kinds })
  await app.register(authPlugin)

  // 3. Routes: operations and administration, the shared case resources, then each case kind's own.
  await app.register(healthRoutes)
  await app.register(keyRoutes)
  await app.register(probeRoutes)
  await app.register(auditRoutes, { kinds })
  await app.register(logRoutes, { kinds })
  await app.register(escalationRoutes, { kinds })
  await app.register(webhookRoutes, { kinds })
  await app.register(manifestRoutes, {
    kinds,
    ssePollMs: config.ssePollMs ?? 500,
    sseHeartbeatMs: config.sseHeartbeatMs ?? 15_000,
    sseMaxStreams: config.sseMaxStreams ?? 1000,
  })
  const { auditRecord } = sharedCaseSchemas(kinds)
  for (const kind of kinds) await app.register(kind.routes, { auditRecordSchema: auditRecord })
  await app.register(import('./http/routes/console.ts'))

  await app.ready()
  return app
}
