import type { Queryable } from '../db/pool.ts'
import { signingKeysAll } from '../db/repositories/signing-keys.ts'
import { queryFirst, queryOne, queryRows } from '../db/statement.ts'
import { AppError } from '../errors.ts'
import { checkpointClaims, checkpointKeys } from './core/checkpoint.ts'
import { type CheckpointClaim, checkpointCheck, LogChecker, type TreeCheck } from './core/log-checker.ts'
import {
  bytesEqual,
  compactRangeFromNodes,
  compactRangeRoot,
  encodeBase64,
  rootNodes,
} from './core/transparency.ts'
import {
  CHUNK_LEVEL,
  CHUNK_SIZE,
  type ChunkResult,
  type ChunkTask,
  type MergeState,
  mergeChunk,
  startMerge,
} from './core/verify-chunks.ts'
import { checkpointsBetween } from './store/checkpoints.ts'
import { readNodes, readNodesAbove, readNodesCompletedIn } from './store/merkle-nodes.ts'
import {
  auditHead,
  auditRange,
  auditRecordsForCheck,
  canonicalRecordConstraint,
  canonicalTextGuardOf,
} from './store/records.ts'
import { type ChunkLane, chunkLanes, type ParallelVerify } from './verify-lanes.ts'

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
  /** Check large logs in chunks, on worker threads or over several connections; sequentially when absent. */
  parallel?: ParallelVerify
  /**
   * false: rebuild every record's canonical text from its columns even while the database guards stored texts
   * (what a verification does again when the guard changed while it ran).
   */
  useStoredText?: boolean
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
  const head = await queryOne(db, auditHead())
  const last = Math.min(options.toSeq ?? head.tree_size, head.tree_size)
  const total = Math.max(0, last - fromSeq + 1)

  const previousRow = fromSeq > 1 ? await queryFirst(db, auditRange(fromSeq - 1, fromSeq - 1, 1)) : undefined
  const startSize = Math.min(fromSeq - 1, head.tree_size)
  const range = compactRangeFromNodes(startSize, await readNodes(db, rootNodes(startSize)))
  const sequentialChecker = new LogChecker(
    previousRow ? { seq: previousRow.seq, hash: previousRow.hash } : null,
    range,
  )
  if (fromSeq > 1 && !previousRow) sequentialChecker.fail(fromSeq - 1)

  const guard = options.useStoredText === false ? null : await canonicalTextGuard(db)
  const storedText = guard !== null
  const keys = checkpointKeys((await queryRows(db, signingKeysAll())).map((row) => row.public_jwk))
  const checkpoints = await checkpointClaims(
    await queryRows(db, checkpointsBetween(fromSeq === 1 ? 0 : fromSeq, last)),
    keys,
  )
  const treeChecks = new Map([...checkpoints].map(([size, claim]) => [size, checkpointCheck(claim)]))
  let checkpointsChecked = 0
  const emptyClaim = checkpoints.get(0)
  if (fromSeq === 1 && emptyClaim) {
    checkpointsChecked++
    if (!emptyClaim.signaturesOk || !bytesEqual(emptyClaim.rootHash, compactRangeRoot(range))) {
      sequentialChecker.fail(1)
    }
  }

  // Large logs from the start: chunks checked by worker threads, merged in order. The merge stops at the first
  // chunk where anything is wrong; from there the log is checked record by record for the exact first bad seq.
  let startSeq = fromSeq
  let checker = sequentialChecker
  let done = { checked: 0, checkpoints: 0, last: null as { seq: number; hash: string } | null }
  if (options.parallel && fromSeq === 1 && total >= 2 * CHUNK_SIZE && checker.result.firstBadSeq === null) {
    const merged = await verifyChunksInParallel(
      db,
      options.parallel,
      last,
      checkpoints,
      storedText,
      (checked) => options.onProgress?.(checked, total),
    )
    startSeq = merged.range.size + 1
    checker = new LogChecker(merged.last, merged.range)
    done = { checked: merged.checked, checkpoints: merged.checkpointsChecked, last: merged.last }
  }

  if (startSeq <= last && checker.result.firstBadSeq === null) {
    await checkSlices(db, checker, { from: startSeq, last, storedText, treeChecks }, (checked) =>
      options.onProgress?.(done.checked + checked, total),
    )
  }

  const result = checker.result
  const lastChecked = result.head ?? done.last
  // The head row must name the last record when the check reached it.
  if (result.firstBadSeq === null && last === head.tree_size && last >= fromSeq) {
    if (lastChecked?.seq !== head.seq || lastChecked.hash !== head.hash) checker.fail(head.seq)
  }
  // The stored texts were relied on only while the database held every column equal to them: if that guard
  // changed meanwhile (dropped, perhaps to edit a record, and added again), check again from the columns.
  if (storedText && (await canonicalTextGuard(db)) !== guard) {
    return verifyLog(db, { ...options, useStoredText: false })
  }
  return {
    ok: result.firstBadSeq === null,
    checked: done.checked + result.checked,
    head_seq: lastChecked?.seq ?? null,
    head_hash: lastChecked?.hash ?? null,
    tree_size: result.range.size,
    root_hash: encodeBase64(compactRangeRoot(result.range)),
    checkpoints_checked: checkpointsChecked + done.checkpoints + result.checkpointsChecked,
    first_bad_seq: result.firstBadSeq,
  }
}

/**
 * Checks records [from, last] slice by slice with `checker`, the next slice read while this one is hashed, until
 * the end or the first bad seq.
 */
async function checkSlices(
  db: Queryable,
  checker: LogChecker,
  range: { from: number; last: number; storedText: boolean; treeChecks: ReadonlyMap<number, TreeCheck> },
  onProgress: (checked: number) => void,
): Promise<void> {
  const { last, storedText, treeChecks } = range
  const readSlice = async (from: number) => {
    const to = Math.min(last, from + SLICE - 1)
    const [records, nodes] = await Promise.all([
      auditRecordsForCheck(db, from, to, storedText),
      readNodesCompletedIn(db, from - 1, to),
    ])
    return { from, to, records, nodes }
  }
  let next: ReturnType<typeof readSlice> | null = readSlice(range.from)
  while (next) {
    const slice: Awaited<ReturnType<typeof readSlice>> = await next
    next = slice.to < last ? readSlice(slice.to + 1) : null
    const ok = checker.push(slice.records, slice.nodes, treeChecks)
    // Records missing from the slice (a deleted tail or a gap) break the chain at the first missing seq.
    if (ok && slice.records.length < slice.to - slice.from + 1) {
      checker.fail((slice.records.at(-1)?.seq ?? slice.from - 1) + 1)
    }
    onProgress(checker.result.checked)
    if (checker.result.firstBadSeq !== null) {
      await next?.catch(() => {})
      return
    }
  }
}

/**
 * Whether the database still holds every record's columns equal to its stored canonical text: the guarding
 * constraint's oid, or null (see `canonicalTextGuardOf`).
 */
export async function canonicalTextGuard(db: Queryable): Promise<number | null> {
  return canonicalTextGuardOf(await queryRows(db, canonicalRecordConstraint()))
}

/**
 * Runs the chunks over the lanes (`chunkLanes`), each given as many as it takes at once, and merges their results in
 * order until the end or the first chunk that is not right.
 */
async function verifyChunksInParallel(
  db: Queryable,
  parallel: ParallelVerify,
  last: number,
  claims: ReadonlyMap<number, CheckpointClaim>,
  storedText: boolean,
  onProgress: (checked: number) => void,
): Promise<MergeState> {
  const upperNodes = await readNodesAbove(db, CHUNK_LEVEL)
  const sizes = [...claims.keys()].sort((a, b) => a - b)
  const tasks: ChunkTask[] = []
  for (let from = 1, index = 0; from <= last; from += CHUNK_SIZE, index++) {
    const to = Math.min(last, from + CHUNK_SIZE - 1)
    tasks.push({
      index,
      from,
      to,
      checkpointSizes: sizes.filter((size) => size >= from && size <= to),
      storedText,
    })
  }
  const state = startMerge()
  const results = new Map<number, ChunkResult>()
  let sent = 0
  let merged = 0
  let stopped = false
  const lanes = chunkLanes(parallel, tasks.length)
  // One loop per task a lane takes at once: each sends the next task when its last one is done.
  const loop = async (lane: ChunkLane) => {
    while (!stopped && sent < tasks.length) {
      const result = await lane.check(tasks[sent++]!)
      results.set(result.index, result)
      while (!stopped && results.has(merged)) {
        const chunk = results.get(merged)!
        results.delete(merged)
        if (!mergeChunk(state, chunk, upperNodes, claims)) stopped = true
        else merged++
        onProgress(state.checked)
      }
    }
  }
  try {
    await Promise.all(lanes.flatMap((lane) => Array.from({ length: lane.capacity }, () => loop(lane))))
  } finally {
    stopped = true
    await Promise.all(lanes.map((lane) => lane.close()))
  }
  return state
}
