import { generateKeyPairSync } from 'node:crypto'
import type { TestContext } from 'node:test'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { type AppConfig, type AppOptions, buildApp } from '../../src/app.ts'
import { type SigningKey, signingKeyFromPem } from '../../src/crypto/signing-key.ts'
import type { Role } from '../../src/domain/vocabulary.ts'
import { createApiKey } from '../../src/services/keys.ts'
import { registerSigningKey } from '../../src/services/signing-keys.ts'
import { createTestDatabase, type TestDatabase, testPoolMax } from './database.ts'

export async function newSigningKey(): Promise<SigningKey> {
  const { privateKey } = generateKeyPairSync('ed25519')
  return signingKeyFromPem(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString())
}

export interface TestApp {
  app: FastifyInstance
  db: TestDatabase
  adminKey: string
  /** Creates a key of the given role through the service (orchestrator keys need ids). */
  key(role: Role, orchestratorIds?: string[]): Promise<string>
  /** `app.inject` with a bearer key. */
  request(key: string | null, options: InjectOptions): Promise<LightMyRequestResponse>
}

export interface TestAppOptions {
  config?: Partial<AppConfig>
  signingKey?: SigningKey
  /** Reuse a database (several app instances on one database); otherwise one is created for this app. */
  database?: TestDatabase
  /** pino options for the app's logger (e.g. with a `stream` to read what it logs); default: no logging. */
  logger?: AppOptions['logger']
  /** Case kinds of the test's own, served beside the registered ones. */
  extraCaseKinds?: AppOptions['extraCaseKinds']
}

/** Builds the app on a database of its own and closes both when the test (or suite) ends. */
export async function buildTestApp(
  t: Pick<TestContext, 'after'>,
  options: TestAppOptions = {},
): Promise<TestApp> {
  const ownDatabase = options.database === undefined
  const db = options.database ?? (await createTestDatabase())
  const signingKey = options.signingKey ?? (await newSigningKey())
  const app = await buildApp({
    config: {
      connectionString: db.connectionString,
      dbPoolMax: testPoolMax(db.kind),
      bodyLimitBytes: 1024 * 1024,
      rateLimitPerMinute: 0,
      // Tests send unknown keys on purpose; the tests of failed-authentication throttling turn it on.
      authFailuresPerMinute: 0,
      probeAllowedHosts: [],
      probeAllowPrivate: true,
      probeEnv: {},
      ...options.config,
      // app.inject shares the event loop with the test's own work (fuzzers, megabyte bodies) on a machine that may
      // be busy: a stalled loop or a long wait for a connection there is the test's, not overload. The overload
      // tests set their own limits.
      overload: { maxEventLoopDelayMs: 30_000, maxDbWaitMs: 30_000, ...options.config?.overload },
    },
    signingKey,
    logger: options.logger ?? false,
    extraCaseKinds: options.extraCaseKinds,
  })
  t.after(async () => {
    await app.close()
    if (ownDatabase) await db.stop()
  })
  // What the runtime does at start: the database is migrated already (createTestDatabase); record the key.
  await registerSigningKey(app.services.db, signingKey)
  const key = async (role: Role, orchestratorIds?: string[]) =>
    (
      await createApiKey(
        app.services,
        { role, orchestrator_ids: orchestratorIds, label: `test ${role}` },
        'system',
      )
    ).key
  const adminKey = await key('admin')
  return {
    app,
    db,
    adminKey,
    key,
    request: (bearer, injectOptions) =>
      app.inject({
        ...injectOptions,
        headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...injectOptions.headers },
      }),
  }
}
