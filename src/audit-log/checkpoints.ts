import { KeyObject } from 'node:crypto'
import { signCanonical } from '../crypto/jws.ts'
import type { SigningKey } from '../crypto/signing-key.ts'
import type { Queryable } from '../db/pool.ts'
import { queryFirst, queryOne } from '../db/statement.ts'
import { canonicalJson } from '../domain/shared/canonical-json.ts'
import { logCheckpoint } from './core/checkpoint.ts'
import { GENESIS_HASH } from './core/records.ts'
import { formatCheckpoint, rootFromNodes, rootNodes, signNote } from './core/transparency.ts'
import {
  type CheckpointRow,
  checkpointInsertIfAbsent,
  checkpointOfSize,
  type LogState,
  logStateFromRow,
  logStateQuery,
} from './store/checkpoints.ts'
import { readNodes } from './store/merkle-nodes.ts'
import { auditRange } from './store/records.ts'

/** Who signs checkpoints: the log's origin (its name, and the note key's name) and the service's key. */
export interface CheckpointSigner {
  origin: string
  key: SigningKey
}

/**
 * A signed checkpoint covering the whole log as it is now: the latest stored one if it does, else a new one
 * signed at the current tree size. Replicas signing the same size at once all return the one stored first.
 */
export async function currentCheckpoint(
  db: Queryable,
  signer: CheckpointSigner,
  /** The log's state if already read (by a read that waited for the log to catch up). */
  state?: Pick<LogState, 'head' | 'latest'>,
): Promise<CheckpointRow> {
  const { head, latest } = state ?? logStateFromRow(await queryOne(db, logStateQuery(null)))
  if (latest && latest.tree_size >= head.tree_size) return latest
  const headHash =
    head.tree_size === head.seq
      ? head.hash
      : (await queryFirst(db, auditRange(head.tree_size, head.tree_size, 1)))?.hash
  return signCheckpoint(db, signer, head.tree_size, headHash ?? GENESIS_HASH)
}

/** Signs and stores the checkpoint of the tree of `treeSize` leaves, whose last record has `headHash`. */
export async function signCheckpoint(
  db: Queryable,
  signer: CheckpointSigner,
  treeSize: number,
  headHash: string,
): Promise<CheckpointRow> {
  const root = rootFromNodes(treeSize, await readNodes(db, rootNodes(treeSize)))
  const checkpoint = logCheckpoint(signer.origin, treeSize, root, headHash, new Date().toISOString())
  const note = signNote(formatCheckpoint({ origin: signer.origin, treeSize, rootHash: root }), {
    name: signer.origin,
    privateKey: keyObjectOf(signer.key),
  })
  const row = {
    tree_size: treeSize,
    checkpoint_jcs: canonicalJson(checkpoint),
    note,
    jws: await signCanonical(checkpoint, signer.key),
  }
  // No row: another replica stored that size after the insert's snapshot was taken; it is committed by now.
  return (
    (await queryFirst(db, checkpointInsertIfAbsent(row))) ?? (await queryOne(db, checkpointOfSize(treeSize)))
  )
}

const keyObjects = new WeakMap<SigningKey, KeyObject>()

/** The signing key as a node KeyObject (what the note signer takes); the JOSE form may be a CryptoKey. */
function keyObjectOf(key: SigningKey): KeyObject {
  let keyObject = keyObjects.get(key)
  if (!keyObject) {
    keyObject = key.privateKey instanceof KeyObject ? key.privateKey : KeyObject.from(key.privateKey)
    keyObjects.set(key, keyObject)
  }
  return keyObject
}
