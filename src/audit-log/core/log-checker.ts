import { hash } from 'node:crypto'
import { type AuditRecord, canonicalAuditParts, GENESIS_HASH, splitAtHash } from './records.ts'
import { recordLeafHash } from './sequence-batch.ts'
import {
  appendLeaves,
  bytesEqual,
  type CompactRange,
  compactRangeRoot,
  type NodeHashes,
} from './transparency.ts'

/** Stored tree nodes by position (level, idx); undefined for a node that is not stored. */
export type NodeLookup = (level: number, index: number) => Uint8Array | undefined

/** A lookup over nodes keyed `level:idx` (`nodeKey`), for callers that hold them in a map. */
export function lookupIn(hashes: NodeHashes): NodeLookup {
  return (level, index) => hashes.get(`${level}:${index}`)
}

/**
 * A record as the checker takes it: its place and links, and its canonical text without `hash` split where
 * `hash` goes in its leaf (after `data`). `parts` is null when its stored text cannot be right (it differs from
 * the text rebuilt from its columns, or has no key where `hash` goes): the record is bad whatever its hash.
 */
export interface CheckedRecord {
  seq: number
  prev_hash: string
  hash: string
  parts: readonly [head: string, tail: string] | null
}

/**
 * A record whose canonical text is rebuilt from its fields (`data` canonicalized again). A stored text, when
 * given, must be that text exactly: the record is bad otherwise.
 */
export function checkedRecord(record: AuditRecord, storedText: string | null = null): CheckedRecord {
  const parts = canonicalAuditParts(record)
  const agrees = storedText === null || storedText === parts[0] + parts[1]
  return { seq: record.seq, prev_hash: record.prev_hash, hash: record.hash, parts: agrees ? parts : null }
}

/**
 * A record with its canonical text as stored, which the database holds equal to its columns, split where `hash`
 * goes (`splitAtHash`). A text without the key that follows `hash` is bad whatever its hash.
 */
export function storedRecord(seq: number, prev_hash: string, hash: string, canonical: string): CheckedRecord {
  return { seq, prev_hash, hash, parts: splitAtHash(canonical) }
}

/** What a stored checkpoint claims about the tree at its size, after its signatures were checked. */
export interface CheckpointClaim {
  treeSize: number
  rootHash: Uint8Array
  headHash: string
  /** False when the note or the JWS does not verify, or the two disagree: the checkpoint is bad whatever its root. */
  signaturesOk: boolean
}

/**
 * A check of the tree at one size, run when the records up to that size have been added: given the tree's
 * compact range there and the last record's hash. Returns whether it holds.
 */
export type TreeCheck = (range: CompactRange, lastHash: string) => boolean

/** The check of a stored checkpoint: signatures good, head hash and root those of the records' tree. */
export function checkpointCheck(claim: CheckpointClaim): TreeCheck {
  return (range, lastHash) =>
    claim.signaturesOk && claim.headHash === lastHash && bytesEqual(claim.rootHash, compactRangeRoot(range))
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
 * Checks the log in seq order: each record's chain link and hash, its leaf and every tree node it completes
 * against the stored ones, and each stored checkpoint's root and head at its size. Records are taken one at a
 * time (`add`: the chain, and the leaf, so nothing else of a record is kept), the tree over them when the stored
 * nodes they complete are at hand (`flush`); `push` does both for a slice. Pure: the caller reads the records,
 * the stored nodes, and the checkpoints. A node counts as bad at the seq that completed it, a checkpoint at its
 * tree size.
 */
export class LogChecker {
  private readonly state: LogCheck
  /** What the next record must link to: the previous record's seq and hash (the genesis at the start). */
  private expected: { seq: number; hash: string }
  private readonly firstSeq: number
  /** Records added since the last flush, which the tree has yet to take: their leaves and their hashes. */
  private leaves: Uint8Array[] = []
  private hashes: string[] = []
  /** Where the chain broke among the records added since the last flush (the tree is checked up to there). */
  private chainBreak: number | null = null

  /**
   * `previous` is the record before the first one checked (null from the start); `range` is the tree before the
   * first record checked (trusted as stored when the check does not start at seq 1).
   */
  constructor(previous: { seq: number; hash: string } | null, range: CompactRange) {
    this.expected = previous ?? { seq: 0, hash: GENESIS_HASH }
    this.firstSeq = this.expected.seq + 1
    this.state = { firstBadSeq: null, checked: 0, head: null, range, checkpointsChecked: 0 }
  }

  get result(): Readonly<LogCheck> {
    return this.state
  }

  /**
   * Checks consecutive records with the stored nodes they complete (by position as this checker's range numbers
   * them) and runs the tree checks whose size falls among them. Returns false once something is bad
   * (the caller may stop reading).
   */
  push(
    records: readonly CheckedRecord[],
    storedNodes: NodeLookup,
    treeChecks: ReadonlyMap<number, TreeCheck>,
  ): boolean {
    for (const record of records) if (!this.add(record)) break
    return this.flush(storedNodes, treeChecks)
  }

  /**
   * Takes the next record: its link and hash, then its leaf (its canonical text is built once for both). Returns
   * false once the chain is broken, here or before; the break is reported by the next `flush`, after the tree up
   * to it, so the report names the earliest failure.
   */
  add(record: CheckedRecord): boolean {
    if (this.state.firstBadSeq !== null || this.chainBreak !== null) return false
    if (record.seq !== this.expected.seq + 1) {
      // Records are missing (or repeated): the log breaks at the first seq that is not there.
      this.chainBreak = this.expected.seq + 1
      return false
    }
    if (record.parts === null) {
      this.chainBreak = record.seq
      return false
    }
    const [head, tail] = record.parts
    if (
      record.prev_hash !== this.expected.hash ||
      `sha256:${hash('sha256', record.prev_hash + head + tail, 'hex')}` !== record.hash
    ) {
      this.chainBreak = record.seq
      return false
    }
    // The hash just matched `sha256:` and hex digits: it needs no escaping.
    this.leaves.push(recordLeafHash(`${head}"hash":"${record.hash}",${tail}`))
    this.hashes.push(record.hash)
    this.expected = { seq: record.seq, hash: record.hash }
    return true
  }

  /**
   * Adds the leaves of the records added since the last flush to the tree, checking the nodes they complete
   * against `storedNodes` and the tree checks whose size falls among them, in runs that end at each check's size
   * (its root is compared there); then reports a chain break found by `add`. Returns false once something is bad.
   */
  flush(storedNodes: NodeLookup, treeChecks: ReadonlyMap<number, TreeCheck>): boolean {
    const state = this.state
    if (state.firstBadSeq !== null) return false
    const { leaves, hashes } = this
    const first = this.expected.seq - leaves.length + 1
    this.leaves = []
    this.hashes = []
    let at = 0
    while (at < leaves.length) {
      let end = at + 1
      while (end < leaves.length && !treeChecks.has(state.range.size + (end - at))) end++
      const before = state.range
      const appended = appendLeaves(before, leaves.slice(at, end))
      for (const node of appended.nodes) {
        const stored = storedNodes(node.level, node.index)
        // A node completes with the last leaf it covers: that record's seq is where the tree went wrong.
        if (stored === undefined || !bytesEqual(stored, node.hash)) {
          const badSeq = (node.index + 1) * 2 ** node.level
          // The report's tree is the one over the records before the bad one.
          state.range = appendLeaves(before, leaves.slice(at, badSeq - first)).range
          return this.failAfter(hashes, first, badSeq)
        }
      }
      state.range = appended.range
      const lastHash = hashes[end - 1]!
      const check = treeChecks.get(appended.range.size)
      if (check) {
        state.checkpointsChecked++
        if (!check(appended.range, lastHash)) {
          state.range = appendLeaves(before, leaves.slice(at, end - 1)).range
          return this.failAfter(hashes, first, first + end - 1)
        }
      }
      state.checked += end - at
      state.head = { seq: first + end - 1, hash: lastHash }
      at = end
    }
    if (this.chainBreak !== null) return this.fail(this.chainBreak)
    return true
  }

  /** Bad at `seq`, found among the records from `first` on, whose hashes are `hashes`: every one before was good. */
  private failAfter(hashes: readonly string[], first: number, seq: number): false {
    if (seq - 1 >= first) this.state.head = { seq: seq - 1, hash: hashes[seq - 1 - first]! }
    this.state.checked = seq - this.firstSeq
    return this.fail(seq)
  }

  /** Marks the check bad at `seq` (e.g. records missing at the end, or a head that points past them). */
  fail(seq: number): false {
    if (this.state.firstBadSeq === null || seq < this.state.firstBadSeq) this.state.firstBadSeq = seq
    return false
  }
}
