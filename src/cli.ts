#!/usr/bin/env node
import { describeCliFailure } from './cli-failure.ts'
import type { Config } from './config.ts'

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
  mcp                                     serve MCP over stdio for agents (ARBITER_URL, ARBITER_API_KEY;
                                          see mcp --help)

Database and data dir come from the environment (DATABASE_URL, ARBITER_DATA_DIR) as for the service
(mcp excepted: it calls a running Arbiter over HTTP).
With the embedded database, stop the service first: one process at a time may open its data dir.`

/** The commands `runCommand` knows (besides `verify`, which needs no configuration). */
const COMMANDS = new Set(['serve', 'migrate', 'keys', 'audit', 'signing-key'])

const out = (text: string) => process.stdout.write(text)
const err = (text: string) => process.stderr.write(text)

export async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv
  if (command === 'verify') {
    // Offline: neither the configuration, the database driver nor the services (nor, for them, this).
    const { runVerifyCommand } = await import('./audit-log/verify-command.ts')
    return runVerifyCommand(args, { stdout: out, stderr: err })
  }
  if (command === 'mcp') {
    // A client of a running Arbiter: no database, no configuration; stdout belongs to the protocol.
    const { runMcpCommand } = await import('./mcp/command.ts')
    return runMcpCommand(args, process.env, { stdin: process.stdin, stdout: process.stdout, err })
  }
  if (command === undefined || command === 'help' || command === '--help') {
    out(`${USAGE}\n`)
    return command === undefined ? 2 : 0
  }
  if (!COMMANDS.has(command)) {
    err(`arbiter: unknown command ${JSON.stringify(command)}\n${USAGE}\n`)
    return 2
  }
  // Loaded only now: `verify` above needs neither the configuration, the database driver nor the services.
  const { ConfigError, loadConfig } = await import('./config.ts')
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
  if (command === 'serve') {
    // Not through cli-commands, which loads the database driver: with tracing on, its instrumentation must be in
    // place before `pg` loads (server.ts starts it first).
    const { parseCommandArgs } = await import('./cli-args.ts')
    parseCommandArgs('serve', args, {})
    await (await import('./server.ts')).serve()
    return -1 // keeps running
  }
  const { runCommand } = await import('./cli-commands.ts')
  const code = await runCommand(command, config, args, { out, err, usage: USAGE })
  if (code !== null) return code
  err(`${USAGE}\n`)
  return 2
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code)
  },
  (e: unknown) => {
    const { message, exitCode } = describeCliFailure(e)
    err(`arbiter: ${message}\n`)
    process.exit(exitCode)
  },
)
