import {
  type CheckedRecord,
  type CheckpointClaim,
  LogChecker,
  type NodeLookup,
  type TreeCheck,
} from './log-checker.ts'
import { GENESIS_HASH } from './records.ts'
import {
  appendLeaves,
  bytesEqual,
  type CompactRange,
  compactRangeRoot,
  EMPTY_COMPACT_RANGE,
  type NodeHashes,
} from './transparency.ts'

/**
 * Verifying the log in parallel: the records are cut into chunks of 2^11, aligned to the tree, so every tree node
 * up to level 11 lies inside one chunk and each chunk is checked on its own (chain links, leaves and nodes inside
 * it) by a worker. The chunks' roots are then the leaves of the tree above level 11, which the merge checks in
 * order, with the links between chunks and the checkpoints. Pure: workers and the driver do the I/O.
 * A worker checks each record as its row arrives and keeps its leaf and hash until the chunk's stored nodes are
 * read; 2^11 records a chunk is small enough to keep the merge's results in order close behind the workers.
 */
export const CHUNK_LEVEL = 11
export const CHUNK_SIZE = 2 ** CHUNK_LEVEL

/** One chunk: records [from, to], with to − from < CHUNK_SIZE and from − 1 a multiple of CHUNK_SIZE. */
export interface ChunkTask {
  index: number
  from: number
  to: number
  /** Checkpoint sizes in (from − 1, to]: the chunk reports its part of the tree at each. */
  checkpointSizes: number[]
  /** Whether records' stored canonical text may be hashed as stored (see `eachAuditRecordForCheck`). */
  storedText: boolean
}

export interface ChunkResult {
  index: number
  from: number
  /** Records that checked out, from the first one on. */
  checked: number
  /** The first record's prev_hash: the merge links it to the previous chunk's last hash. */
  firstPrevHash: string | null
  last: { seq: number; hash: string } | null
  /**
   * Null when every record of the chunk, its leaves and its nodes up to level 11 check out; otherwise the merge
   * stops there and checks the chunk again record by record for the exact first bad seq (a bad node is named
   * here by its position in the chunk, not in the log).
   */
  firstBadSeq: number | null
  /** The chunk's part of the tree over its good records: perfect node hashes, largest first. */
  endHashes: Uint8Array[]
  /** The chunk's part of the tree at each checkpoint size inside it, with the record at that size. */
  atSizes: { size: number; hashes: Uint8Array[]; headHash: string }[]
}

/** A hash in a buffer of its own: a view into a shared pool would post the whole pool to the main thread. */
const own = (hash: Uint8Array) => Uint8Array.from(hash)

/**
 * Checks one chunk: its records are added one at a time as they are read (`add`), then `finish` checks the tree
 * over them against the stored nodes they complete, found by their position in the whole tree (nodes above
 * level 11 are not looked at: the merge checks those).
 */
export class ChunkChecker {
  private readonly base: number
  /** Made with the first record, whose prev_hash the chunk takes as given (the merge links it). */
  private checker: LogChecker | null = null
  private firstPrevHash: string | null = null
  private lastSeq: number
  private received = 0
  private readonly atSizes: ChunkResult['atSizes'] = []
  private readonly checks: Map<number, TreeCheck>

  constructor(private readonly task: ChunkTask) {
    this.base = task.from - 1
    this.lastSeq = this.base
    this.checks = new Map(
      task.checkpointSizes.map((size) => [
        size - this.base,
        (range: CompactRange, headHash: string) => {
          this.atSizes.push({ size, hashes: range.hashes.map(own), headHash })
          return true
        },
      ]),
    )
  }

  add(record: CheckedRecord): void {
    if (!this.checker) {
      this.firstPrevHash = record.prev_hash
      this.checker = new LogChecker({ seq: this.base, hash: record.prev_hash }, EMPTY_COMPACT_RANGE)
    }
    this.received++
    this.lastSeq = record.seq
    this.checker.add(record)
  }

  finish(storedNodes: NodeLookup): ChunkResult {
    const { task, base } = this
    // The chunk's nodes as a tree of its own: node (level, idx) of the chunk is (level, idx + base/2^level) of
    // the whole tree.
    const local: NodeLookup = (level, index) =>
      level <= CHUNK_LEVEL ? storedNodes(level, index + base / 2 ** level) : undefined
    const checker = this.checker ?? new LogChecker({ seq: base, hash: '' }, EMPTY_COMPACT_RANGE)
    if (checker.flush(local, this.checks) && this.received < task.to - task.from + 1) {
      // Records missing at the end of the chunk: the log breaks at the first missing seq.
      checker.fail(this.lastSeq + 1)
    }
    const result = checker.result
    return {
      index: task.index,
      from: task.from,
      checked: result.checked,
      firstPrevHash: this.firstPrevHash,
      last: result.head,
      firstBadSeq: result.firstBadSeq,
      endHashes: result.range.hashes.map(own),
      atSizes: this.atSizes,
    }
  }
}

export interface MergeState {
  /** The tree above level 11: its leaves are the roots of the complete chunks so far. */
  upper: CompactRange
  /** The last record of the chunks merged so far (the next chunk must link to its hash). */
  last: { seq: number; hash: string } | null
  checked: number
  checkpointsChecked: number
  /** The tree over everything merged so far. */
  range: CompactRange
}

export function startMerge(): MergeState {
  return {
    upper: EMPTY_COMPACT_RANGE,
    last: null,
    checked: 0,
    checkpointsChecked: 0,
    range: EMPTY_COMPACT_RANGE,
  }
}

/**
 * Takes the next chunk's result, in order. `upperNodes` are the stored nodes above level 11, keyed
 * `(level − 11):idx` (as `readNodesAbove` reads them); `claims` the checkpoints by size. Returns false when the
 * chunk, its link to the previous one, a checkpoint in it or a node it completes above level 11 is bad; the
 * state then still describes the log up to the previous chunk, from which the exact first bad seq can be found.
 */
export function mergeChunk(
  state: MergeState,
  chunk: ChunkResult,
  upperNodes: NodeHashes,
  claims: ReadonlyMap<number, CheckpointClaim>,
): boolean {
  if (chunk.firstBadSeq !== null) return false
  if (chunk.firstPrevHash !== (state.last?.hash ?? GENESIS_HASH)) return false
  let checkpointsChecked = 0
  for (const at of chunk.atSizes) {
    const claim = claims.get(at.size)
    if (!claim) continue
    checkpointsChecked++
    const root = compactRangeRoot({ size: at.size, hashes: [...state.upper.hashes, ...at.hashes] })
    if (!claim.signaturesOk || claim.headHash !== at.headHash || !bytesEqual(claim.rootHash, root))
      return false
  }
  let upper = state.upper
  if (chunk.checked === CHUNK_SIZE) {
    // A complete chunk: its root is the next leaf of the upper tree, and may complete nodes above level 11.
    const appended = appendLeaves(upper, chunk.endHashes)
    for (const node of appended.nodes) {
      if (node.level === 0) continue
      const stored = upperNodes.get(`${node.level}:${node.index}`)
      if (stored === undefined || !bytesEqual(stored, node.hash)) return false
    }
    upper = appended.range
  }
  state.checkpointsChecked += checkpointsChecked
  state.checked += chunk.checked
  state.last = chunk.last
  state.range = {
    size: chunk.from - 1 + chunk.checked,
    hashes: chunk.checked === CHUNK_SIZE ? [...upper.hashes] : [...state.upper.hashes, ...chunk.endHashes],
  }
  state.upper = upper
  return true
}
