import { generateKeyPairSync } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.ts'
import { signingKeyFromPem } from './crypto/signing-key.ts'

export const OPENAPI_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'openapi', 'openapi.json')

/** The document exactly as committed: stable key order from the routes, two-space indent, final newline. */
export function renderOpenApi(app: FastifyInstance): string {
  return `${JSON.stringify(app.swagger(), null, 2)}\n`
}

/**
 * `npm run openapi`: builds the app and writes openapi/openapi.json. Nothing it does needs a database: the
 * connection string below is never reached (the audit log's sequencer only retries against it until the app
 * closes).
 */
async function main() {
  const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const app = await buildApp({
    config: {
      connectionString: 'postgres://unused@127.0.0.1:1/unused',
      dbPoolMax: 1,
      bodyLimitBytes: 1048576,
      rateLimitPerMinute: 0,
      probeAllowedHosts: [],
      probeAllowPrivate: false,
      probeEnv: {},
      // A fixed origin, so the log's identity is never read from the (absent) database.
      logOrigin: 'openapi.local/log',
    },
    signingKey: await signingKeyFromPem(pem),
  })
  await writeFile(OPENAPI_FILE, renderOpenApi(app))
  await app.close()
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`)
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) {
  main().catch((err: unknown) => {
    process.stderr.write(`openapi: ${(err as Error).message}\n`)
    process.exit(1)
  })
}
