import { writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.ts'
import { signingKeyFromPem } from './crypto/signing-key.ts'
import { startEmbeddedPostgres } from './db/embedded.ts'

export const OPENAPI_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'openapi', 'openapi.json')

/** The document exactly as committed: stable key order from the routes, two-space indent, final newline. */
export function renderOpenApi(app: FastifyInstance): string {
  return `${JSON.stringify(app.swagger(), null, 2)}\n`
}

/** `npm run openapi`: builds the app on a throw-away in-memory database and writes openapi/openapi.json. */
async function main() {
  const { generateKeyPairSync } = await import('node:crypto')
  const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const db = await startEmbeddedPostgres()
  try {
    const app = await buildApp({
      config: {
        connectionString: db.connectionString,
        dbPoolMax: 1,
        bodyLimitBytes: 1048576,
        rateLimitPerMinute: 0,
        probeAllowedHosts: [],
        probeAllowPrivate: false,
        probeEnv: {},
      },
      signingKey: await signingKeyFromPem(pem),
    })
    await writeFile(OPENAPI_FILE, renderOpenApi(app))
    await app.close()
    process.stdout.write(`wrote ${OPENAPI_FILE}\n`)
  } finally {
    await db.stop()
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) {
  main().catch((err: unknown) => {
    process.stderr.write(`openapi: ${(err as Error).message}\n`)
    process.exit(1)
  })
}
