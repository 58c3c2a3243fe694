import { decodeBase64, encodeBase64 } from './base64.ts'
import { type NoteVerifier, type VerifiedNote, verifyNote, verifyNoteAsync } from './note.ts'
import { HASH_SIZE } from './rfc9162.ts'

/** A log's tree head: who (origin), how many leaves, and the root over them. */
export interface Checkpoint {
  readonly origin: string
  readonly treeSize: number
  readonly rootHash: Uint8Array
}

/** A parsed checkpoint body with its extension lines (opaque, usually none). */
export interface ParsedCheckpoint extends Checkpoint {
  readonly extensions: readonly string[]
}

/** A checkpoint body or signed checkpoint that does not hold up. */
export class CheckpointError extends Error {
  override name = 'CheckpointError'
}

const DECIMAL = /^(?:0|[1-9][0-9]*)$/

/** The checkpoint note text: origin, decimal tree size and base64 root hash, each line ending in a newline. */
export function formatCheckpoint({ origin, treeSize, rootHash }: Checkpoint): string {
  if (origin === '' || origin.includes('\n')) {
    throw new CheckpointError('the origin must be one non-empty line')
  }
  if (!Number.isSafeInteger(treeSize) || treeSize < 0) {
    throw new CheckpointError('the tree size must be an integer ≥ 0')
  }
  if (rootHash.length !== HASH_SIZE) throw new CheckpointError(`the root hash must be ${HASH_SIZE} bytes`)
  return `${origin}\n${treeSize}\n${encodeBase64(rootHash)}\n`
}

/**
 * Parses a checkpoint note text strictly: at least three non-empty lines each ending in a newline, a size
 * without sign or leading zero that fits a safe integer, a canonical base64 root of 32 bytes, and any
 * further lines non-empty (extension lines).
 */
export function parseCheckpoint(text: string): ParsedCheckpoint {
  if (!text.endsWith('\n')) throw new CheckpointError('a checkpoint ends in a newline')
  const [origin, size, root, ...extensions] = text.slice(0, -1).split('\n')
  if (origin === undefined || size === undefined || root === undefined) {
    throw new CheckpointError('a checkpoint has at least three lines')
  }
  if (origin === '') throw new CheckpointError('the origin is empty')
  const treeSize = Number(size)
  if (!DECIMAL.test(size) || !Number.isSafeInteger(treeSize)) {
    throw new CheckpointError(
      `the tree size ${JSON.stringify(size)} is not a decimal integer this log can hold`,
    )
  }
  const rootHash = decodeBase64(root)
  if (rootHash === undefined || rootHash.length !== HASH_SIZE) {
    throw new CheckpointError(`the root hash is not the base64 of ${HASH_SIZE} bytes`)
  }
  if (extensions.includes('')) throw new CheckpointError('extension lines must not be empty')
  return { origin, treeSize, rootHash, extensions }
}

/**
 * Opens a signed checkpoint of the log whose key is `logKey`: the note must carry a valid signature by that
 * key (others may be checked too, e.g. witnesses), and its origin must be the key's name. Synchronous, so the
 * Node build only; `openCheckpointAsync` runs anywhere.
 */
export function openCheckpoint(
  note: string | Uint8Array,
  logKey: NoteVerifier,
  otherKeys: readonly NoteVerifier[] = [],
): OpenedCheckpoint {
  return checkpointOf(verifyNote(note, [logKey, ...otherKeys]), logKey)
}

/** `openCheckpoint` with Ed25519 through WebCrypto, in a browser as in Node. */
export async function openCheckpointAsync(
  note: string | Uint8Array,
  logKey: NoteVerifier,
  otherKeys: readonly NoteVerifier[] = [],
): Promise<OpenedCheckpoint> {
  return checkpointOf(await verifyNoteAsync(note, [logKey, ...otherKeys]), logKey)
}

export interface OpenedCheckpoint {
  checkpoint: ParsedCheckpoint
  note: VerifiedNote
}

function checkpointOf(opened: VerifiedNote, logKey: NoteVerifier): OpenedCheckpoint {
  if (!opened.verified.some((s) => s.name === logKey.name && s.keyId === logKey.keyId)) {
    throw new CheckpointError('the log key did not sign the checkpoint')
  }
  const checkpoint = parseCheckpoint(opened.text)
  if (checkpoint.origin !== logKey.name) {
    throw new CheckpointError(`the checkpoint's origin is not ${JSON.stringify(logKey.name)}`)
  }
  return { checkpoint, note: opened }
}
