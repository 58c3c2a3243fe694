import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { parseArgs } from 'node:util'
import { streamAuditRecords } from './audit/service.ts'
import type { Config } from './config.ts'
import { loadSigningKey, rotateDataDirSigningKey } from './crypto/signing-key.ts'
import type { Pool } from './db/pool.ts'
import { registerSigningKey } from './db/repositories/signing-keys.ts'
import { ROLES } from './domain/vocabulary.ts'
import { VerifiableLog } from './log/verifiable-log.ts'
import { verifyWorkers } from './log/verify-workers.ts'
import { progressBar } from './progress-bar.ts'
import { openPool, prepareDatabase } from './runtime.ts'
import { createApiKey, pageKeys, revokeKey } from './services/keys.ts'

/**
 * The CLI commands that open the database (and `serve`). Loaded only when one of them runs, so `arbiter verify`
 * starts without the database driver, the services or the HTTP app.
 */

export interface CommandOutput {
  out: (text: string) => void
  err: (text: string) => void
  usage: string
}

async function withPool<T>(
  config: Config,
  fn: (pool: Awaited<ReturnType<typeof openPool>>['pool']) => Promise<T>,
) {
  const { pool, close } = await openPool(config)
  try {
    await prepareDatabase(pool, null)
    return await fn(pool)
  } finally {
    await close()
  }
}

/**
 * Runs `fn` with the audit log open: this process's sequencer helps (or takes over from a stopped service) so
 * that what the command reads includes every change committed before it started.
 */
async function withAuditLog<T>(
  config: Config,
  err: (text: string) => void,
  fn: (log: VerifiableLog, pool: Pool) => Promise<T>,
) {
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

async function keysCommand(
  config: Config,
  args: string[],
  { out, err, usage }: CommandOutput,
): Promise<number> {
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
        { db: pool },
        { role, orchestrator_ids: values['orchestrator-id'], label: values.label ?? `${role} key (cli)` },
        'system',
      ),
    )
    out(`${JSON.stringify(created, null, 2)}\n`)
    err('The key above is shown once; store it now.\n')
    return 0
  }
  if (sub === 'list') {
    const keys = await withPool(config, async (pool) => {
      const all = []
      let cursor: string | undefined
      do {
        const page = await pageKeys({ db: pool }, { limit: 500, cursor })
        all.push(...page.items)
        cursor = page.next_cursor ?? undefined
      } while (cursor !== undefined)
      return all
    })
    out(`${JSON.stringify(keys, null, 2)}\n`)
    return 0
  }
  if (sub === 'revoke' && positionals[0]) {
    await withPool(config, (pool) => revokeKey({ db: pool }, positionals[0]!, 'system'))
    out(`revoked ${positionals[0]}\n`)
    return 0
  }
  err(`${usage}\n`)
  return 2
}

async function auditCommand(
  config: Config,
  args: string[],
  { out, err, usage }: CommandOutput,
): Promise<number> {
  const [sub, ...rest] = args
  const { values } = parseArgs({
    args: rest,
    options: { 'from-seq': { type: 'string' }, 'to-seq': { type: 'string' }, out: { type: 'string' } },
  })
  if (sub === 'verify') {
    const from = values['from-seq'] ? Number(values['from-seq']) : 1
    const to = values['to-seq'] ? Number(values['to-seq']) : undefined
    const bar = process.stderr.isTTY ? progressBar(process.stderr, 'verifying') : undefined
    const report = await withAuditLog(config, err, async (log) => {
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
    const count = await withAuditLog(config, err, async (log, pool) => {
      await log.catchUp()
      let n = 0
      for await (const record of streamAuditRecords({ db: pool }, {})) {
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
  err(`${usage}\n`)
  return 2
}

/** Runs a command other than `verify`; returns its exit code, -1 while it keeps running (serve), or null. */
export async function runCommand(
  command: string,
  config: Config,
  args: string[],
  output: CommandOutput,
): Promise<number | null> {
  const { out, err } = output
  switch (command) {
    case 'serve':
      await (await import('./server.ts')).serve()
      return -1 // keeps running
    case 'migrate': {
      const { pool, close } = await openPool(config)
      try {
        const applied = await prepareDatabase(pool, null)
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
      return keysCommand(config, args, output)
    case 'audit':
      return auditCommand(config, args, output)
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
  return null
}
