import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { JwksError, loadJwks } from './jwks.ts'
import { type Jwks, verifyEnvelope } from './jws.ts'

export interface CommandOutput {
  stdout: (s: string) => void
  stderr: (s: string) => void
}

export const VERIFY_USAGE =
  'usage: arbiter verify <envelope.json> --jwks <jwks.json|https://…/.well-known/jwks.json>'

/** Exit codes follow diff(1): 0 verified, 1 invalid, 2 the check could not be run. */
export const VERIFY_EXIT = { ok: 0, invalid: 1, trouble: 2 } as const

/**
 * `arbiter verify <envelope.json> --jwks <jwks.json|url>`: offline verification of a saved
 * manifest envelope. `argv` is what follows `verify`. Each output is one line ending in `\n`,
 * so `out` can write straight to process.stdout / process.stderr.
 *
 * A usage error, an unreadable envelope file or an unloadable JWKS exits 2; an envelope that
 * was read but fails any check (including not being JSON) exits 1 with `invalid: <reason>`.
 */
export async function runVerifyCommand(argv: string[], out: CommandOutput): Promise<number> {
  let envelopePath: string
  let jwksSource: string
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { jwks: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    })
    if (values.help) {
      out.stdout(`${VERIFY_USAGE}\n`)
      return VERIFY_EXIT.ok
    }
    if (positionals.length !== 1) throw new Error('expected exactly one envelope file')
    if (!values.jwks) throw new Error('--jwks is required')
    envelopePath = positionals[0]!
    jwksSource = values.jwks
  } catch (err) {
    out.stderr(`error: ${(err as Error).message}\n${VERIFY_USAGE}\n`)
    return VERIFY_EXIT.trouble
  }

  let envelopeText: string
  try {
    envelopeText = await readFile(envelopePath, 'utf8')
  } catch (err) {
    out.stderr(`error: cannot read ${envelopePath}: ${(err as NodeJS.ErrnoException).code ?? String(err)}\n`)
    return VERIFY_EXIT.trouble
  }

  let jwks: Jwks
  try {
    jwks = await loadJwks(jwksSource)
  } catch (err) {
    out.stderr(`error: ${err instanceof JwksError ? err.message : String(err)}\n`)
    return VERIFY_EXIT.trouble
  }

  let envelope: unknown
  try {
    envelope = JSON.parse(envelopeText)
  } catch {
    out.stderr(`invalid: ${envelopePath} is not valid JSON\n`)
    return VERIFY_EXIT.invalid
  }

  const result = await verifyEnvelope(envelope, jwks)
  if (!result.ok) {
    out.stderr(`invalid: ${result.reason}\n`)
    return VERIFY_EXIT.invalid
  }
  const manifestId = (envelope as { manifest: { manifest_id?: unknown } }).manifest.manifest_id
  out.stdout(`ok: manifest ${String(manifestId)} signed by ${result.kid}\n`)
  return VERIFY_EXIT.ok
}
