import { hash } from 'node:crypto'
import {
  type AuditRecord,
  canonicalAuditRecordWithHash,
  canonicalTextWithHash,
  type SealedAuditRecord,
  sealAuditRecord,
  type UnsequencedAuditRecord,
} from './records.ts'
import { appendLeaves, type CompactRange, type StoredNode } from './transparency.ts'

/** Where the log ends: the last record's seq and hash, and how many records are leaves of the tree. */
export interface LogHead {
  seq: number
  hash: string
  treeSize: number
}

/** The tree at a head: the head and the tree's right edge there (the perfect subtrees of its size). */
export interface TreeAtHead {
  head: LogHead
  range: CompactRange
}

/**
 * The right edge kept from `known` when `locked` is the same head: the same last record (seq and hash, so the same
 * records and leaves) and the same tree size. Undefined otherwise: the edge must be read from the stored nodes.
 */
export function keptRightEdge(known: TreeAtHead | null, locked: LogHead): CompactRange | undefined {
  if (known === null) return undefined
  const { head } = known
  return head.seq === locked.seq && head.hash === locked.hash && head.treeSize === locked.treeSize
    ? known.range
    : undefined
}

export interface SequencedBatch {
  /** The records, each with the canonical text its hash covers (stored beside it). */
  records: SealedAuditRecord[]
  /** Every perfect subtree the new leaves completed, leaves included: what the tree store must insert. */
  nodes: StoredNode[]
  head: LogHead
  range: CompactRange
}

/**
 * The leaf hash of a record from the JCS of the whole record (its hash included): SHA-256(0x00 ‖ UTF-8(text)),
 * the RFC 9162 leaf hash (`leafHash`) in one native call — U+0000 encodes as the single byte 0x00. A test holds
 * the two equal; this runs for every record sequenced and every record verified.
 */
export function recordLeafHash(canonicalRecordWithHash: string): Buffer {
  return Buffer.from(hash('sha256', `\u0000${canonicalRecordWithHash}`, 'binary'), 'latin1')
}

/** The record's leaf hash: SHA-256(0x00 ‖ UTF-8 of JCS(record)), the whole record with its hash. */
export function auditLeafHash(record: AuditRecord): Uint8Array {
  return recordLeafHash(canonicalAuditRecordWithHash(record))
}

/**
 * Places entries at the end of the log: consecutive seqs after the head, each chained to the one before, each a
 * new leaf of the tree. Pure: the sequencer supplies the head it locked and the tree's right edge at that head,
 * and stores what this returns in the same transaction.
 */
export function sequenceEntries(
  head: LogHead,
  range: CompactRange,
  entries: readonly UnsequencedAuditRecord[],
): SequencedBatch {
  if (head.treeSize !== head.seq || range.size !== head.treeSize) {
    throw new RangeError(
      `the tree must hold every record before more are sequenced (seq ${head.seq}, tree ${head.treeSize}, range ${range.size})`,
    )
  }
  const records: SealedAuditRecord[] = []
  const leaves: Uint8Array[] = []
  let previous = { seq: head.seq, hash: head.hash }
  for (const entry of entries) {
    const record = sealAuditRecord({
      seq: previous.seq + 1,
      at: entry.at,
      kind: entry.kind,
      actor: entry.actor,
      outcome_id: entry.outcome_id,
      manifest_id: entry.manifest_id,
      subagent_id: entry.subagent_id,
      orchestrator_id: entry.orchestrator_id,
      verdict: entry.verdict,
      data: entry.data,
      prev_hash: previous.hash,
    })
    records.push(record)
    leaves.push(recordLeafHash(canonicalTextWithHash(record.canonical, record.hash)))
    previous = record
  }
  const appended = appendLeaves(range, leaves)
  return {
    records,
    nodes: appended.nodes,
    head: { seq: previous.seq, hash: previous.hash, treeSize: appended.range.size },
    range: appended.range,
  }
}

/**
 * Makes leaves of records already in the chain but not yet in the tree (records written before the tree
 * existed keep their seq and hash and become its first leaves). `records` must start at seq `range.size + 1`.
 */
export function extendTree(
  range: CompactRange,
  records: readonly AuditRecord[],
): { nodes: StoredNode[]; range: CompactRange } {
  records.forEach((record, i) => {
    if (record.seq !== range.size + i + 1) {
      throw new RangeError(`record ${record.seq} is not leaf ${range.size + i + 1} of the tree`)
    }
  })
  return appendLeaves(range, records.map(auditLeafHash))
}
