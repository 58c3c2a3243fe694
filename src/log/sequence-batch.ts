import {
  type AuditEntry,
  type AuditRecord,
  canonicalAuditRecordWithHash,
  hashAuditRecord,
  type UnhashedAuditRecord,
} from '../domain/shared/audit-chain.ts'
import { appendLeaves, type CompactRange, leafHash, type StoredNode } from './transparency.ts'

/** Where the log ends: the last record's seq and hash, and how many records are leaves of the tree. */
export interface LogHead {
  seq: number
  hash: string
  treeSize: number
}

export interface SequencedBatch {
  records: AuditRecord[]
  /** Every perfect subtree the new leaves completed, leaves included: what the tree store must insert. */
  nodes: StoredNode[]
  head: LogHead
  range: CompactRange
}

const utf8 = new TextEncoder()

/** The record's leaf hash: SHA-256(0x00 ‖ UTF-8 of JCS(record)), the whole record with its hash. */
export function auditLeafHash(record: AuditRecord): Uint8Array {
  return leafHash(utf8.encode(canonicalAuditRecordWithHash(record)))
}

/**
 * Places entries at the end of the log: consecutive seqs after the head, each chained to the one before, each a
 * new leaf of the tree. Pure: the sequencer supplies the head and the tree's right edge it read under the head
 * lock, and stores what this returns in the same transaction.
 */
export function sequenceEntries(
  head: LogHead,
  range: CompactRange,
  entries: readonly AuditEntry[],
): SequencedBatch {
  if (head.treeSize !== head.seq || range.size !== head.treeSize) {
    throw new RangeError(
      `the tree must hold every record before more are sequenced (seq ${head.seq}, tree ${head.treeSize}, range ${range.size})`,
    )
  }
  const records: AuditRecord[] = []
  let previous = { seq: head.seq, hash: head.hash }
  for (const entry of entries) {
    const unhashed: UnhashedAuditRecord = {
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
    }
    const record: AuditRecord = { ...unhashed, hash: hashAuditRecord(unhashed) }
    records.push(record)
    previous = record
  }
  const appended = appendLeaves(range, records.map(auditLeafHash))
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
