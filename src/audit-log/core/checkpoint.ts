import { createPublicKey } from 'node:crypto'
import { type Jwks, verifyCompactAgainstJwks } from '../../crypto/jws.ts'
import type { CheckpointClaim } from './log-checker.ts'
import { GENESIS_HASH } from './records.ts'
import {
  decodeBase64,
  encodeBase64,
  type NoteVerifier,
  noteVerifier,
  openCheckpoint,
} from './transparency.ts'

/** A checkpoint as JSON: the tree head with the chain head at the same size, and when it was signed. */
export interface LogCheckpoint {
  origin: string
  tree_size: number
  /** Base64 of the 32-byte RFC 9162 root over the first tree_size records. */
  root_hash: string
  /** The last record the tree holds (equal to tree_size; 0 for the empty log). */
  head_seq: number
  /** That record's chain hash (the genesis hash for the empty log). */
  head_hash: string
  at: string
}

/** A signed checkpoint: the JSON, the C2SP signed note of its tree head, and a JWS over JCS(checkpoint). */
export interface SignedCheckpoint {
  checkpoint: LogCheckpoint
  note: string
  jws: string
}

/**
 * A signed checkpoint as it is kept: its tree size, the checkpoint JSON exactly as the JWS signs it (JCS), the
 * signed note and the JWS.
 */
export interface StoredCheckpoint {
  tree_size: number
  checkpoint_jcs: string
  note: string
  jws: string
}

export function signedCheckpointFromRow(row: StoredCheckpoint): SignedCheckpoint {
  return { checkpoint: JSON.parse(row.checkpoint_jcs) as LogCheckpoint, note: row.note, jws: row.jws }
}

/** The checkpoint of the tree of `treeSize` leaves with root `root`, whose last record has `headHash`. */
export function logCheckpoint(
  origin: string,
  treeSize: number,
  root: Uint8Array,
  headHash: string,
  at: string,
): LogCheckpoint {
  return {
    origin,
    tree_size: treeSize,
    root_hash: encodeBase64(root),
    head_seq: treeSize,
    head_hash: treeSize === 0 ? GENESIS_HASH : headHash,
    at,
  }
}

/** The keys stored checkpoints are checked against: every key that ever signed, as a JWKS and as note keys. */
export interface CheckpointKeys {
  jwks: Jwks
  /** Note verifiers by origin (each key under the origin its checkpoints name). */
  notes(origin: string): NoteVerifier[]
}

/** The checkpoint keys of the service's public Ed25519 keys. */
export function checkpointKeys(publicJwks: (Jwks['keys'][number] & { x: string })[]): CheckpointKeys {
  const jwks = { keys: publicJwks }
  const publicKeys = publicJwks.map((jwk) =>
    createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' }),
  )
  const byOrigin = new Map<string, NoteVerifier[]>()
  return {
    jwks,
    notes(origin) {
      let verifiers = byOrigin.get(origin)
      if (!verifiers) {
        verifiers = publicKeys.map((key) => noteVerifier(origin, key))
        byOrigin.set(origin, verifiers)
      }
      return verifiers
    },
  }
}

/** Checks each checkpoint's signatures and that its JSON, note and JWS agree; the root is compared later. */
export async function checkpointClaims(
  rows: readonly StoredCheckpoint[],
  keys: CheckpointKeys,
): Promise<Map<number, CheckpointClaim>> {
  const claims = new Map<number, CheckpointClaim>()
  for (const row of rows) {
    let checkpoint: LogCheckpoint | undefined
    let signaturesOk = false
    try {
      checkpoint = JSON.parse(row.checkpoint_jcs) as LogCheckpoint
      const jws = await verifyCompactAgainstJwks(row.jws, keys.jwks)
      const opened = openNoteWithAnyKey(row.note, keys.notes(checkpoint.origin))
      signaturesOk =
        jws.ok &&
        jws.payload === row.checkpoint_jcs &&
        opened !== undefined &&
        opened.treeSize === row.tree_size &&
        checkpoint.tree_size === row.tree_size &&
        checkpoint.head_seq === row.tree_size &&
        opened.root === checkpoint.root_hash
    } catch {
      signaturesOk = false
    }
    claims.set(row.tree_size, {
      treeSize: row.tree_size,
      rootHash: decodeBase64(checkpoint?.root_hash ?? '') ?? new Uint8Array(),
      headHash: row.tree_size === 0 ? GENESIS_HASH : (checkpoint?.head_hash ?? ''),
      signaturesOk,
    })
  }
  return claims
}

/** Opens a checkpoint note with whichever of the keys signed it; undefined when none verifies. */
function openNoteWithAnyKey(
  note: string,
  verifiers: readonly NoteVerifier[],
): { treeSize: number; root: string } | undefined {
  for (const verifier of verifiers) {
    try {
      const { checkpoint } = openCheckpoint(note, verifier)
      return { treeSize: checkpoint.treeSize, root: encodeBase64(checkpoint.rootHash) }
    } catch {
      // Signed by another key (rotation), or not at all: try the next one.
    }
  }
  return undefined
}
