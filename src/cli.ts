import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { parseArgs } from 'node:util'
import { verifyWorkers } from './app.ts'
import { type Config, ConfigError, loadConfig } from './config.ts'
import { loadSigningKey, rotateDataDirSigningKey } from './crypto/signing-key.ts'
import { runVerifyCommand } from './crypto/verify-command.ts'
import { migrate } from './db/migrate.ts'
import type { Pool } from './db/pool.ts'
import { VerifiableLog } from './log/verifiable-log.ts'
import { progressBar } from './progress-bar.ts'
import { openPool } from './runtime.ts'
import { serve } from './server.ts'
import { streamAuditRecords } from './services/audit.ts'
import { createApiKey, listKeys, ROLES, revokeKey } from './services/keys.ts'
import { registerSigningKey } from './services/signing.ts'

const USAGE = `usage: npm run arbiter -- <command>

  serve                                   run the service (same as npm start)
  migrate                                 apply pending migrations
  keys create --role <role> [--orchestrator-id <id>]... [--label <text>]
  keys list
  keys revoke <key-id>
  verify <envelope.json> --jwks <jwks.json|url>
  signing-key rotate                      new data-dir signing key; old kids stay in the JWKS
  audit verify [--from-seq N] [--to-seq N]
  audit export [--out file.ndjson]        every audit record as NDJSON (stdout by default)

Database and data dir come from the environment (DATABASE_URL, ARBITER_DATA_DIR) as for the service.
With the embedded database, stop the service first: one process at a time may open its data dir.`

const out = (text: string) => process.stdout.write(text)
const err = (text: string) => process.stderr.write(text)

async function withPool<T>(
  config: Config,
  fn: (pool: Awaited<ReturnType<typeof openPool>>['pool']) => Promise<T>,
) {
  const { pool, close } = await openPool(config)
  try {
    await migrate(pool)
    return await fn(pool)
  } finally {
    await close()
  }
}

async function keysCommand(config: Config, args: string[]): Promise<number> {
  const [sub, ...rest] = args
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      role: { type: 'string' },
      'orchestrator-id': { type: 'string', multiple: true },
      label: { type: 'string' },
    },
  })
  if (sub === 'create') {
    const role = values.role as (typeof ROLES)[number] | undefined
    if (!role || !ROLES.includes(role)) {
      err(`keys create needs --role ${ROLES.join('|')}\n`)
      return 2
    }
    const created = await withPool(config, (pool) =>
      createApiKey(
        pool,
        { role, orchestrator_ids: values['orchestrator-id'], label: values.label ?? `${role} key (cli)` },
        'system',
      ),
    )
    out(`${JSON.stringify(created, null, 2)}\n`)
    err('The key above is shown once; store it now.\n')
    return 0
  }
  if (sub === 'list') {
    const keys = await withPool(config, (pool) => listKeys(pool, null, 10_000))
    out(`${JSON.stringify(keys, null, 2)}\n`)
    return 0
  }
  if (sub === 'revoke' && positionals[0]) {
    await withPool(config, (pool) => revokeKey(pool, positionals[0]!, 'system'))
    out(`revoked ${positionals[0]}\n`)
    return 0
  }
  err(`${USAGE}\n`)
  return 2
}

/**
 * Runs `fn` with the audit log open: this process's sequencer helps (or takes over from a stopped service) so
 * that what the command reads includes every change committed before it started.
 */
async function withAuditLog<T>(config: Config, fn: (log: VerifiableLog, pool: Pool) => Promise<T>) {
  return withPool(config, async (pool) => {
    const key = await loadSigningKey({ signingKey: config.signingKey, dataDir: config.dataDir })
    await registerSigningKey(pool, key)
    const log = await VerifiableLog.open(pool, key, {
      origin: config.logOrigin,
      checkpointIntervalMs: config.checkpointIntervalMs,
      // Building the tree over a large existing log can take a while; the CLI waits for it.
      catchUpTimeoutMs: 30 * 60_000,
      parallelVerify: {
        connectionString:
          (pool as { options?: { connectionString?: string } }).options?.connectionString ?? '',
        workers: verifyWorkers(),
      },
      onError: (e) => err(`audit sequencer: ${(e as Error).message}\n`),
    })
    log.start()
    try {
      return await fn(log, pool)
    } finally {
      await log.stop()
    }
  })
}

async function auditCommand(config: Config, args: string[]): Promise<number> {
  const [sub, ...rest] = args
  const { values } = parseArgs({
    args: rest,
    options: { 'from-seq': { type: 'string' }, 'to-seq': { type: 'string' }, out: { type: 'string' } },
  })
  if (sub === 'verify') {
    const from = values['from-seq'] ? Number(values['from-seq']) : 1
    const to = values['to-seq'] ? Number(values['to-seq']) : undefined
    const bar = process.stderr.isTTY ? progressBar(process.stderr, 'verifying') : undefined
    const report = await withAuditLog(config, async (log) => {
      try {
        return await log.verify({ fromSeq: from, toSeq: to, onProgress: bar?.update })
      } finally {
        bar?.finish()
      }
    })
    out(`${JSON.stringify(report)}\n`)
    if (!report.ok) err(`audit log does not verify at seq ${report.first_bad_seq}\n`)
    return report.ok ? 0 : 1
  }
  if (sub === 'export') {
    const sink = values.out ? createWriteStream(values.out) : process.stdout
    const count = await withAuditLog(config, async (log, pool) => {
      await log.catchUp()
      let n = 0
      for await (const record of streamAuditRecords(pool, {}, null)) {
        if (!sink.write(`${JSON.stringify(record)}\n`)) await once(sink, 'drain')
        n += 1
      }
      return n
    })
    if (values.out) {
      ;(sink as ReturnType<typeof createWriteStream>).end()
      await once(sink, 'finish')
    }
    err(`exported ${count} audit records\n`)
    return 0
  }
  err(`${USAGE}\n`)
  return 2
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv
  if (command === 'verify') return runVerifyCommand(args, { stdout: out, stderr: err })
  if (command === undefined || command === 'help' || command === '--help') {
    out(`${USAGE}\n`)
    return command === undefined ? 2 : 0
  }
  let config: Config
  try {
    config = loadConfig(process.env)
  } catch (e) {
    if (e instanceof ConfigError) {
      err(`arbiter: ${e.message}\n`)
      return 1
    }
    throw e
  }
  switch (command) {
    case 'serve':
      await serve()
      return -1 // keeps running
    case 'migrate': {
      const { pool, close } = await openPool(config)
      try {
        const applied = await migrate(pool)
        out(
          applied.length === 0
            ? 'schema is current; nothing to apply\n'
            : `applied:\n${applied.join('\n')}\n`,
        )
      } finally {
        await close()
      }
      return 0
    }
    case 'keys':
      return keysCommand(config, args)
    case 'audit':
      return auditCommand(config, args)
    case 'signing-key': {
      if (args[0] !== 'rotate') break
      if (config.signingKey) {
        err('ARBITER_SIGNING_KEY is set: rotate by starting the service with a new key instead\n')
        return 2
      }
      const key = await rotateDataDirSigningKey(config.dataDir)
      await withPool(config, (pool) => registerSigningKey(pool, key))
      out(`new signing key ${key.kid}; restart the service to sign with it (old kids stay in the JWKS)\n`)
      return 0
    }
  }
  err(`${USAGE}\n`)
  return 2
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code)
  },
  (e: unknown) => {
    err(`arbiter: ${(e as Error).message}\n`)
    process.exit(1)
  },
)
