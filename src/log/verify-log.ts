import { createPublicKey } from 'node:crypto'
import { type Jwks, verifyCompactAgainstJwks } from '../crypto/jws.ts'
import type { Queryable } from '../db/pool.ts'
import { type CheckpointRow, checkpointsBetween } from '../db/repositories/audit-checkpoints.ts'
import { auditRange, auditRecordsForCheck, readAuditHead } from '../db/repositories/audit-records.ts'
import { readNodes, readNodesCompletedIn } from '../db/repositories/merkle-nodes.ts'
import { GENESIS_HASH } from '../domain/audit-chain.ts'
import { AppError } from '../errors.ts'
import { listSigningKeys } from '../services/signing.ts'
import type { LogCheckpoint } from './checkpoints.ts'
import { type CheckpointClaim, LogChecker } from './log-checker.ts'
import {
  bytesEqual,
  compactRangeFromNodes,
  compactRangeRoot,
  decodeBase64,
  encodeBase64,
  type NoteVerifier,
  noteVerifier,
  openCheckpoint,
  rootNodes,
} from './transparency.ts'

export interface VerifyReport {
  ok: boolean
  checked: number
  head_seq: number | null
  head_hash: string | null
  tree_size: number
  root_hash: string
  checkpoints_checked: number
  first_bad_seq: number | null
}

export interface VerifyOptions {
  fromSeq?: number
  toSeq?: number
  /** Called after each slice with the records checked so far and the number to check. */
  onProgress?: (checked: number, total: number) => void
}

const SLICE = 8_192

/**
 * Verifies the log over [fromSeq, toSeq] (default: all of it): the chain, the tree (every leaf and every stored
 * node recomputed from the records) and every stored checkpoint in the range (root and head at its size, the
 * signed note and the JWS, against every key that ever signed). Reads in slices, so memory stays bounded; the
 * next slice is read while this one is hashed. Call after the sequencer has caught up.
 */
export async function verifyLog(db: Queryable, options: VerifyOptions = {}): Promise<VerifyReport> {
  const fromSeq = options.fromSeq ?? 1
  if (fromSeq < 1) throw new AppError('VALIDATION', 'from_seq starts at 1')
  const head = await readAuditHead(db)
  const last = Math.min(options.toSeq ?? head.tree_size, head.tree_size)
  const total = Math.max(0, last - fromSeq + 1)

  const previousRow = fromSeq > 1 ? (await auditRange(db, fromSeq - 1, fromSeq - 1, 1))[0] : undefined
  const startSize = Math.min(fromSeq - 1, head.tree_size)
  const range = compactRangeFromNodes(startSize, await readNodes(db, rootNodes(startSize)))
  const checker = new LogChecker(previousRow ? { seq: previousRow.seq, hash: previousRow.hash } : null, range)
  if (fromSeq > 1 && !previousRow) checker.fail(fromSeq - 1)

  const keys = await checkpointKeys(db)
  const checkpoints = await checkpointClaims(
    await checkpointsBetween(db, fromSeq === 1 ? 0 : fromSeq, last),
    keys,
  )
  let checkpointsChecked = 0
  const emptyClaim = checkpoints.get(0)
  if (fromSeq === 1 && emptyClaim) {
    checkpointsChecked++
    if (!emptyClaim.signaturesOk || !bytesEqual(emptyClaim.rootHash, compactRangeRoot(range))) checker.fail(1)
  }

  const readSlice = async (from: number) => {
    const to = Math.min(last, from + SLICE - 1)
    const [records, nodes] = await Promise.all([
      auditRecordsForCheck(db, from, to),
      readNodesCompletedIn(db, from - 1, to),
    ])
    return { from, to, records, nodes }
  }
  let next = total > 0 && checker.result.firstBadSeq === null ? readSlice(fromSeq) : null
  while (next) {
    const slice = await next
    next = slice.to < last ? readSlice(slice.to + 1) : null
    const ok = checker.push(slice.records, slice.nodes, checkpoints)
    // Records missing from the slice (a deleted tail or a gap) break the chain at the first missing seq.
    if (ok && slice.records.length < slice.to - slice.from + 1) {
      checker.fail((slice.records.at(-1)?.seq ?? slice.from - 1) + 1)
    }
    options.onProgress?.(checker.result.checked, total)
    if (checker.result.firstBadSeq !== null) {
      await next?.catch(() => {})
      break
    }
  }

  const result = checker.result
  // The head row must name the last record when the check reached it.
  if (result.firstBadSeq === null && last === head.tree_size && last >= fromSeq) {
    if (result.head?.seq !== head.seq || result.head.hash !== head.hash) checker.fail(head.seq)
  }
  return {
    ok: result.firstBadSeq === null,
    checked: result.checked,
    head_seq: result.head?.seq ?? null,
    head_hash: result.head?.hash ?? null,
    tree_size: result.range.size,
    root_hash: encodeBase64(compactRangeRoot(result.range)),
    checkpoints_checked: checkpointsChecked + result.checkpointsChecked,
    first_bad_seq: result.firstBadSeq,
  }
}

interface CheckpointKeys {
  jwks: Jwks
  /** Note verifiers by origin (each key under the origin its checkpoints name). */
  notes(origin: string): NoteVerifier[]
}

async function checkpointKeys(db: Queryable): Promise<CheckpointKeys> {
  const jwks = { keys: await listSigningKeys(db) }
  const publicKeys = jwks.keys.map((jwk) =>
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
async function checkpointClaims(
  rows: readonly CheckpointRow[],
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
