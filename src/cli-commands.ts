import { once } from 'node:events'
import { createWriteStream, existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { streamAuditRecords } from './audit-log/reads.ts'
import { VerifiableLog } from './audit-log/verifiable-log.ts'
import { verifyWorkers } from './audit-log/verify-workers.ts'
import {
  type FlagSpecs,
  integerFlag,
  keyIdArgument,
  parseCommandArgs,
  textFlag,
  UsageError,
} from './cli-args.ts'
import { describeCliFailure, NoDatabaseError } from './cli-failure.ts'
import type { Config } from './config.ts'
import { loadSigningKey, rotateDataDirSigningKey } from './crypto/signing-key.ts'
import type { Pool } from './db/pool.ts'
import { queryFirst, statement } from './db/statement.ts'
import { ROLES } from './domain/vocabulary.ts'
import { progressBar, withStatusLine } from './progress-bar.ts'
import { openPool, prepareDatabase } from './runtime.ts'
import { createApiKey, pageKeys, revokeKey } from './services/keys.ts'
import { registerSigningKey } from './services/signing-keys.ts'

/**
 * The CLI commands that open the database (and `serve`). Loaded only when one of them runs, so `arbiter verify`
 * starts without the database driver, the services or the HTTP app.
 */

export interface CommandOutput {
  out: (text: string) => void
  err: (text: string) => void
  usage: string
}

/**
 * Whether a command may create the database it opens. Only `migrate` and `keys create` (the first admin key,
 * before the first start) may; a command that reads or changes what a database holds refuses to run on none
 * (`NoDatabaseError`, exit 2) rather than create an empty one and report on it.
 */
type Creates = 'may-create' | 'existing-only'

async function withPool<T>(
  config: Config,
  creates: Creates,
  fn: (pool: Awaited<ReturnType<typeof openPool>>['pool']) => Promise<T>,
) {
  if (creates === 'existing-only') assertEmbeddedDatabaseExists(config)
  // Opening the embedded database takes a second or two: a terminal is told what it waits for.
  const { pool, close } =
    process.stderr.isTTY && !config.databaseUrl
      ? await withStatusLine(
          process.stderr,
          `opening the embedded database in ${resolve(config.dataDir)}`,
          () => openPool(config),
        )
      : await openPool(config)
  try {
    if (creates === 'existing-only') await assertSchemaExists(pool)
    await prepareDatabase(pool, null)
    return await fn(pool)
  } finally {
    await close()
  }
}

/** Without DATABASE_URL: the data dir must hold an embedded database already (opening one would create it). */
function assertEmbeddedDatabaseExists(config: Config): void {
  if (config.databaseUrl) return
  const dataDir = resolve(config.dataDir)
  if (!existsSync(join(dataDir, 'pgdata', 'PG_VERSION'))) {
    throw new NoDatabaseError(
      `no Arbiter database in ${dataDir}: set ARBITER_DATA_DIR to the service's data dir, or DATABASE_URL`,
    )
  }
}

/** A database that Arbiter never migrated holds no Arbiter data: nothing to read, and nothing is created. */
async function assertSchemaExists(pool: Pool): Promise<void> {
  const schema = await queryFirst(
    pool,
    statement<{ present: boolean }>(`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`),
  )
  if (!schema?.present) {
    throw new NoDatabaseError(
      'no Arbiter database at DATABASE_URL (it has no Arbiter schema): start the service or run `arbiter migrate` first',
    )
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
  return withPool(config, 'existing-only', async (pool) => {
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
      onError: (e) => err(`audit sequencer: ${describeCliFailure(e).message}\n`),
    })
    log.start()
    try {
      return await fn(log, pool)
    } finally {
      await log.stop()
    }
  })
}

const KEY_FLAGS: FlagSpecs = { role: {}, 'orchestrator-id': { multiple: true }, label: {} }

async function keysCommand(config: Config, args: string[], { out, err }: CommandOutput): Promise<number> {
  const [sub, ...rest] = args
  if (sub === 'create') {
    const { flags } = parseCommandArgs('keys create', rest, KEY_FLAGS)
    const role = flags.role?.[0] as (typeof ROLES)[number] | undefined
    if (!role || !ROLES.includes(role)) throw new UsageError(`keys create needs --role ${ROLES.join('|')}`)
    const orchestratorIds = flags['orchestrator-id']?.map((id) => textFlag('orchestrator-id', id, 200))
    if (orchestratorIds && orchestratorIds.length > 100) {
      throw new UsageError('--orchestrator-id is given more than 100 times')
    }
    const label = flags.label ? textFlag('label', flags.label[0]!, 200) : `${role} key (cli)`
    const created = await withPool(config, 'may-create', (pool) =>
      createApiKey({ db: pool }, { role, orchestrator_ids: orchestratorIds, label }, 'system'),
    )
    out(`${JSON.stringify(created, null, 2)}\n`)
    err('The key above is shown once; store it now.\n')
    return 0
  }
  if (sub === 'list') {
    parseCommandArgs('keys list', rest, {})
    const keys = await withPool(config, 'existing-only', async (pool) => {
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
  if (sub === 'revoke') {
    const id = keyIdArgument(parseCommandArgs('keys revoke', rest, {}, 1).positionals[0])
    await withPool(config, 'existing-only', (pool) => revokeKey({ db: pool }, id, 'system'))
    out(`revoked ${id}\n`)
    return 0
  }
  throw unknownSubcommand('keys', sub, ['create', 'list', 'revoke'])
}

async function auditCommand(config: Config, args: string[], { out, err }: CommandOutput): Promise<number> {
  const [sub, ...rest] = args
  if (sub === 'verify') {
    const { flags } = parseCommandArgs('audit verify', rest, { 'from-seq': {}, 'to-seq': {} })
    const from = flags['from-seq'] ? integerFlag('from-seq', flags['from-seq'][0]!, 1) : 1
    const to = flags['to-seq'] ? integerFlag('to-seq', flags['to-seq'][0]!, 1) : undefined
    if (to !== undefined && to < from) throw new UsageError(`--to-seq (${to}) is below --from-seq (${from})`)
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
    const outFile = parseCommandArgs('audit export', rest, { out: {} }).flags.out?.[0]
    const sink = outFile ? await openOutputFile(outFile) : process.stdout
    const count = await withAuditLog(config, err, async (log, pool) => {
      let n = 0
      for await (const record of streamAuditRecords({ db: pool, auditLog: log }, {})) {
        if (!sink.write(`${record}\n`)) await once(sink, 'drain')
        n += 1
      }
      return n
    })
    if (outFile) {
      ;(sink as ReturnType<typeof createWriteStream>).end()
      await once(sink, 'finish')
    }
    err(`exported ${count} audit records\n`)
    return 0
  }
  throw unknownSubcommand('audit', sub, ['verify', 'export'])
}

function unknownSubcommand(command: string, sub: string | undefined, known: string[]): UsageError {
  return new UsageError(
    sub === undefined
      ? `${command} needs a subcommand: ${known.join(', ')}`
      : `${command}: unknown subcommand ${JSON.stringify(sub)} (${known.join(', ')})`,
  )
}

/** Opens `file` for writing before any work starts, so that a bad path is reported as such, up front. */
async function openOutputFile(file: string) {
  const sink = createWriteStream(file)
  try {
    await once(sink, 'open')
  } catch (e) {
    throw new UsageError(`--out: cannot write ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  return sink
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
    case 'migrate': {
      parseCommandArgs('migrate', args, {})
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
      if (args[0] !== 'rotate') throw unknownSubcommand('signing-key', args[0], ['rotate'])
      parseCommandArgs('signing-key rotate', args.slice(1), {})
      if (config.signingKey) {
        err('ARBITER_SIGNING_KEY is set: rotate by starting the service with a new key instead\n')
        return 2
      }
      const key = await withPool(config, 'existing-only', async (pool) => {
        const rotated = await rotateDataDirSigningKey(config.dataDir)
        await registerSigningKey(pool, rotated)
        return rotated
      })
      out(`new signing key ${key.kid}; restart the service to sign with it (old kids stay in the JWKS)\n`)
      return 0
    }
  }
  return null
}
