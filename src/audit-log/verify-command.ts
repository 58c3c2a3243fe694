import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { JwksError, JwksNotIJsonError, loadJwks } from '../crypto/jwks.ts'
import { type Jwks, verifyEnvelope } from '../crypto/jws.ts'
import { decodeUtf8Strictly, describeIJsonViolation } from '../domain/shared/i-json.ts'
import {
  describeCheckpoint,
  documentKind,
  type TrustedCheckpoint,
  verifyCheckpointFile,
  verifyCheckpointNote,
  verifyConsistencyDocument,
  verifyInclusionDocument,
  verifySignedCheckpoint,
} from './core/offline-verify.ts'

export interface CommandOutput {
  stdout: (s: string) => void
  stderr: (s: string) => void
}

export const VERIFY_USAGE = `usage: arbiter verify <file> --jwks <jwks.json|https://…/.well-known/jwks.json>
  <file> is a saved manifest envelope, a signed checkpoint (the JSON or the note), an inclusion proof
  (/v1/audit/proofs/inclusion or /v1/manifests/{id}/inclusion) or a consistency proof.
  --checkpoint <file>   check an inclusion proof against this saved checkpoint
  --manifest <file>     with a manifest's inclusion proof: the manifest envelope it proves was logged
  --from <file> --to <file>   with a consistency proof: the two saved checkpoints it links`

/** Exit codes follow diff(1): 0 verified, 1 invalid, 2 the check could not be run. */
export const VERIFY_EXIT = { ok: 0, invalid: 1, trouble: 2 } as const

class Trouble extends Error {}
/** A file that was read but may not be trusted as it reads (not I-JSON): exit 1. */
class Invalid extends Error {}

/**
 * `arbiter verify <file> --jwks <jwks.json|url>`: offline verification of what Arbiter hands out. `argv` is what
 * follows `verify`. Each output is one line ending in `\n`, so `out` can write straight to process.stdout /
 * process.stderr.
 *
 * A usage error, an unreadable file or an unloadable JWKS exits 2; a file that was read but fails any check
 * (including not being JSON or a note) exits 1 with `invalid: <reason>`. Every JSON file it reads, the JWKS
 * included, must be I-JSON (see `readText`).
 */
export async function runVerifyCommand(argv: string[], out: CommandOutput): Promise<number> {
  let values: { jwks?: string; checkpoint?: string; manifest?: string; from?: string; to?: string }
  let file: string
  try {
    const parsed = parseArgs({
      args: argv,
      options: {
        jwks: { type: 'string' },
        checkpoint: { type: 'string' },
        manifest: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    })
    if (parsed.values.help) {
      out.stdout(`${VERIFY_USAGE}\n`)
      return VERIFY_EXIT.ok
    }
    if (parsed.positionals.length !== 1) throw new Error('expected exactly one file to verify')
    if (!parsed.values.jwks) throw new Error('--jwks is required')
    if ((parsed.values.from === undefined) !== (parsed.values.to === undefined)) {
      throw new Error('--from and --to go together')
    }
    values = parsed.values
    file = parsed.positionals[0]!
  } catch (err) {
    out.stderr(`error: ${(err as Error).message}\n${VERIFY_USAGE}\n`)
    return VERIFY_EXIT.trouble
  }

  try {
    const text = await readText(file)
    const jwks = await loadJwksOrTrouble(values.jwks!)
    const result = await verifyFile(text, file, jwks, values)
    if (!result.ok) {
      out.stderr(`invalid: ${result.reason}\n`)
      return VERIFY_EXIT.invalid
    }
    out.stdout(`ok: ${result.message}\n`)
    return VERIFY_EXIT.ok
  } catch (err) {
    if (err instanceof Invalid) {
      out.stderr(`invalid: ${err.message}\n`)
      return VERIFY_EXIT.invalid
    }
    if (!(err instanceof Trouble)) throw err
    out.stderr(`error: ${err.message}\n`)
    return VERIFY_EXIT.trouble
  }
}

type Result = { ok: true; message: string } | { ok: false; reason: string }

async function verifyFile(
  text: string,
  file: string,
  jwks: Jwks,
  options: { checkpoint?: string; manifest?: string; from?: string; to?: string },
): Promise<Result> {
  const { kind, value } = documentKind(text)
  switch (kind) {
    case 'envelope': {
      const result = await verifyEnvelope(value, jwks)
      if (!result.ok) return result
      const manifestId = (value as { manifest: { manifest_id?: unknown } }).manifest.manifest_id
      return { ok: true, message: `manifest ${String(manifestId)} signed by ${result.kid}` }
    }
    case 'checkpoint':
    case 'note': {
      const trusted =
        kind === 'note' ? verifyCheckpointNote(text, jwks) : await verifySignedCheckpoint(value, jwks)
      return trusted.ok ? { ok: true, message: describeCheckpoint(trusted.checkpoint) } : trusted
    }
    case 'inclusion':
    case 'manifest-inclusion': {
      let external: TrustedCheckpoint | undefined
      if (options.checkpoint) {
        const trusted = await verifyCheckpointFile(await readText(options.checkpoint), jwks)
        if (!trusted.ok) return { ok: false, reason: `${options.checkpoint}: ${trusted.reason}` }
        external = trusted.checkpoint
      }
      let envelope: unknown
      if (options.manifest) {
        try {
          envelope = JSON.parse(await readText(options.manifest))
        } catch (err) {
          if (err instanceof Trouble || err instanceof Invalid) throw err
          return { ok: false, reason: `${options.manifest} is not valid JSON` }
        }
      }
      return verifyInclusionDocument(value, jwks, { external, envelope })
    }
    case 'consistency': {
      if (!options.from || !options.to) {
        return {
          ok: false,
          reason: 'a consistency proof is checked between two checkpoints: give --from and --to',
        }
      }
      const from = await verifyCheckpointFile(await readText(options.from), jwks)
      if (!from.ok) return { ok: false, reason: `${options.from}: ${from.reason}` }
      const to = await verifyCheckpointFile(await readText(options.to), jwks)
      if (!to.ok) return { ok: false, reason: `${options.to}: ${to.reason}` }
      return verifyConsistencyDocument(value, from.checkpoint, to.checkpoint)
    }
    case 'not-json':
      return { ok: false, reason: `${file} is not valid JSON, nor a signed note` }
    default:
      return { ok: false, reason: `${file} is neither a manifest envelope, a signed checkpoint nor a proof` }
  }
}

/**
 * A file's text, refused (Invalid) unless it reads as one value only: strict UTF-8 (an invalid byte is not
 * replaced), and, when it is JSON, I-JSON. JSON.parse keeps the last of two members of one name, so a file
 * could show a person `"directive":"PROCEED"` while the value that was signed, and is checked, says HALT.
 * A signed note is not JSON and is checked as text.
 */
async function readText(file: string): Promise<string> {
  let bytes: Buffer
  try {
    bytes = await readFile(file)
  } catch (err) {
    throw new Trouble(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`)
  }
  const text = decodeUtf8Strictly(bytes)
  if (text === null) throw new Invalid(`${file} is not valid UTF-8`)
  const problem = describeIJsonViolation(text)
  if (problem) throw new Invalid(`${file} is not I-JSON: ${problem}`)
  return text
}

async function loadJwksOrTrouble(source: string): Promise<Jwks> {
  try {
    return await loadJwks(source)
  } catch (err) {
    if (err instanceof JwksNotIJsonError) throw new Invalid(err.message)
    throw new Trouble(err instanceof JwksError ? err.message : String(err))
  }
}
