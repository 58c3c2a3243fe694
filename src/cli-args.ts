import { parseArgs } from 'node:util'

/**
 * Argument checking for the `arbiter` CLI. Every flag and positional is checked here, before anything opens the
 * database: a mistyped number must be answered with the flag's name, not with whatever the database says about
 * the value it was handed (`from_seq=abc` once reached PostgreSQL as `NaN`).
 */

/** A mistake in how the command was called: printed as one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError'
}

/** Every flag of this CLI takes a value; `multiple` ones may be repeated. */
export type FlagSpecs = Record<string, { multiple?: boolean }>

export interface CommandArgs {
  /** The values of each flag given, in order (one unless the flag is `multiple`). */
  flags: Record<string, string[]>
  positionals: string[]
}

/**
 * Parses `args` for `command`: unknown flags, flags without a value and repeated single flags are usage errors
 * naming the flag; more than `maxPositionals` positionals is one too.
 */
export function parseCommandArgs(
  command: string,
  args: string[],
  specs: FlagSpecs,
  maxPositionals = 0,
): CommandArgs {
  const { tokens } = parseArgs({
    args,
    // strict: false so that every mistake arrives here as a token and gets this CLI's own message.
    strict: false,
    allowPositionals: true,
    tokens: true,
    options: Object.fromEntries(Object.keys(specs).map((name) => [name, { type: 'string' as const }])),
  })
  const flags: Record<string, string[]> = {}
  const positionals: string[] = []
  for (const token of tokens) {
    if (token.kind === 'positional') {
      positionals.push(token.value)
      continue
    }
    if (token.kind !== 'option') continue
    const spec = specs[token.name]
    if (!spec || !token.rawName.startsWith('--')) {
      const known = Object.keys(specs).map((name) => `--${name}`)
      throw new UsageError(
        `${command}: unknown flag ${token.rawName}${known.length > 0 ? ` (it takes ${known.join(', ')})` : ' (it takes no flags)'}`,
      )
    }
    // `--from-seq --to-seq 3` would otherwise read "--to-seq" as the value of --from-seq.
    if (token.value === undefined || (!token.inlineValue && token.value.startsWith('--'))) {
      throw new UsageError(`${token.rawName} needs a value`)
    }
    const values = flags[token.name] ?? []
    if (values.length > 0 && !spec.multiple) throw new UsageError(`${token.rawName} is given more than once`)
    values.push(token.value)
    flags[token.name] = values
  }
  if (positionals.length > maxPositionals) {
    throw new UsageError(
      `${command}: unexpected argument ${JSON.stringify(positionals[maxPositionals])}${maxPositionals === 0 ? ' (it takes none)' : ''}`,
    )
  }
  return { flags, positionals }
}

const PLAIN_DECIMAL = /^[0-9]+$/

/**
 * A flag's value as an integer ≥ `min`, written in plain decimal: no sign, no `0x`, no exponent, no blank —
 * `Number()` would read `0x10` as 16 and `''` as 0.
 */
export function integerFlag(flag: string, value: string, min: number): number {
  const n = PLAIN_DECIMAL.test(value) ? Number(value) : Number.NaN
  if (!Number.isSafeInteger(n) || n < min) {
    throw new UsageError(
      `--${flag} must be a plain decimal integer from ${min} to ${Number.MAX_SAFE_INTEGER} (got ${JSON.stringify(value)})`,
    )
  }
  return n
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** An API key's id as `keys list` prints it. */
export function keyIdArgument(value: string | undefined): string {
  if (value === undefined)
    throw new UsageError('keys revoke needs the id of the key (as `keys list` shows it)')
  if (!UUID.test(value)) {
    throw new UsageError(
      `keys revoke: ${JSON.stringify(value)} is not a key id (a UUID, as \`keys list\` shows it)`,
    )
  }
  return value
}

/** A text flag's value: not blank, at most `max` characters (the limits the HTTP API applies to the same field). */
export function textFlag(flag: string, value: string, max: number): string {
  if (value.trim() === '' || value.length > max) {
    throw new UsageError(`--${flag} must be 1 to ${max} characters and not blank`)
  }
  return value
}
