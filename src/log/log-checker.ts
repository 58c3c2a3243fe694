import { type AuditRecord, ChainVerifier } from '../domain/audit-chain.ts'
import { auditLeafHash } from './sequence-batch.ts'
import {
  appendLeaves,
  bytesEqual,
  type CompactRange,
  compactRangeRoot,
  type NodeHashes,
  nodeKey,
} from './transparency.ts'

/** What a stored checkpoint claims about the tree at its size, after its signatures were checked. */
export interface CheckpointClaim {
  treeSize: number
  rootHash: Uint8Array
  headHash: string
  /** False when the note or the JWS does not verify, or the two disagree: the checkpoint is bad whatever its root. */
  signaturesOk: boolean
}

export interface LogCheck {
  /** The first seq where a record, a stored tree node or a stored checkpoint does not verify; null when none. */
  firstBadSeq: number | null
  checked: number
  head: { seq: number; hash: string } | null
  /** The tree recomputed from the records up to the last good one. */
  range: CompactRange
  checkpointsChecked: number
}

/**
 * Checks the log slice by slice, in seq order: each record's chain link and hash, its leaf and every tree node
 * it completes against the stored ones, and each stored checkpoint's root and head at its size. Pure: the
 * caller reads the records, the stored nodes they complete, and the checkpoints. A node counts as bad at the
 * seq that completed it, a checkpoint at its tree size.
 */
export class LogChecker {
  private readonly chain: ChainVerifier
  private readonly state: LogCheck

  /**
   * `previous` is the record before the first one checked (null from the start); `range` is the tree before the
   * first record checked (trusted as stored when the check does not start at seq 1).
   */
  constructor(previous: { seq: number; hash: string } | null, range: CompactRange) {
    this.chain = new ChainVerifier(previous, previous === null)
    this.state = { firstBadSeq: null, checked: 0, head: null, range, checkpointsChecked: 0 }
  }

  get result(): Readonly<LogCheck> {
    return this.state
  }

  /**
   * Checks consecutive records with the stored nodes they complete and the checkpoints whose size falls among
   * them. Returns false once something is bad (the caller may stop reading).
   */
  push(
    records: readonly AuditRecord[],
    storedNodes: NodeHashes,
    checkpoints: ReadonlyMap<number, CheckpointClaim>,
  ): boolean {
    const state = this.state
    if (state.firstBadSeq !== null) return false
    // Chain first: the tree check stops where the chain breaks, so the report names the earliest failure.
    let good = 0
    for (const record of records) {
      if (!this.chain.push(record)) break
      good++
    }
    const chainBreak = this.chain.result.firstBadSeq
    let range = state.range
    for (let i = 0; i < good; i++) {
      const record = records[i]!
      if (record.seq !== range.size + 1) return this.fail(record.seq)
      const appended = appendLeaves(range, [auditLeafHash(record)])
      for (const node of appended.nodes) {
        const stored = storedNodes.get(nodeKey(node))
        if (stored === undefined || !bytesEqual(stored, node.hash)) return this.fail(record.seq)
      }
      range = appended.range
      state.range = range
      const claim = checkpoints.get(range.size)
      if (claim) {
        state.checkpointsChecked++
        const ok =
          claim.signaturesOk &&
          claim.headHash === record.hash &&
          bytesEqual(claim.rootHash, compactRangeRoot(range))
        if (!ok) return this.fail(record.seq)
      }
      state.checked++
      state.head = { seq: record.seq, hash: record.hash }
    }
    if (chainBreak !== null) return this.fail(chainBreak)
    return true
  }

  /** Marks the check bad at `seq` (e.g. records missing at the end, or a head that points past them). */
  fail(seq: number): false {
    if (this.state.firstBadSeq === null || seq < this.state.firstBadSeq) this.state.firstBadSeq = seq
    return false
  }
}
