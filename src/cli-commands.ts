import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import {
  type FlagSpecs,
  integerFlag,
  keyIdArgument,
  parseCommandArgs,
  textFlag,
  UsageError,
} from './cli-args.ts'
import { withAuditLog, withDatabase } from './cli-database.ts'
import type { Config } from './config.ts'
import { ROLES } from './domain/vocabulary.ts'
import { progressBar } from './progress-bar.ts'

/**
 * The CLI commands that open the database. Loaded only when one of them runs, so `arbiter verify` starts without
 * the database driver, the services or the HTTP app; and each command loads what it needs only once it has
 * checked its arguments, while the database starts (cli-database.ts).
 */

export interface CommandOutput {
  out: (text: string) => void
  err: (text: string) => void
  usage: string
}

const KEY_FLAGS: FlagSpecs = { role: {}, 'orchestrator-id': { multiple: true }, label: {} }

const loadKeys = () => import('./services/keys.ts')
const loadNothing = async () => null

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
    const created = await withDatabase(config, 'may-create', loadKeys, ({ pool }, { createApiKey }) =>
      createApiKey({ db: pool }, { role, orchestrator_ids: orchestratorIds, label }, 'system'),
    )
    out(`${JSON.stringify(created, null, 2)}\n`)
    err('The key above is shown once; store it now.\n')
    return 0
  }
  if (sub === 'list') {
    parseCommandArgs('keys list', rest, {})
    const keys = await withDatabase(config, 'existing-only', loadKeys, async ({ pool }, { pageKeys }) => {
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
    await withDatabase(config, 'existing-only', loadKeys, ({ pool }, { revokeKey }) =>
      revokeKey({ db: pool }, id, 'system'),
    )
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
      const { streamAuditRecords } = await import('./audit-log/reads.ts')
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
      const applied = await withDatabase(
        config,
        'may-create',
        loadNothing,
        async (database) => database.applied,
      )
      out(
        applied.length === 0 ? 'schema is current; nothing to apply\n' : `applied:\n${applied.join('\n')}\n`,
      )
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
      const load = () =>
        Promise.all([import('./crypto/signing-key.ts'), import('./services/signing-keys.ts')])
      const key = await withDatabase(config, 'existing-only', load, async ({ pool }, modules) => {
        const [{ rotateDataDirSigningKey }, { registerSigningKey }] = modules
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
