import { queryArrays } from '../../db/array-rows.ts'
import type { Queryable } from '../../db/pool.ts'
import type { NodeLookup } from '../core/log-checker.ts'
import type { NodeId, StoredNode } from '../core/transparency.ts'

/**
 * merkle_nodes: every perfect subtree of the log's tree, written once. level (0 = leaf hashes), idx (position at
 * that level: the node covers leaves [idx * 2^level, (idx + 1) * 2^level)), hash (32 raw bytes).
 */

/** The hashes of the given nodes in one query, keyed by `nodeKey` (`level:idx`); missing nodes are absent. */
export async function readNodes(db: Queryable, ids: readonly NodeId[]): Promise<Map<string, Uint8Array>> {
  const hashes = new Map<string, Uint8Array>()
  if (ids.length === 0) return hashes
  const rows = await queryArrays<[number, number, Buffer]>(
    db,
    `SELECT n.level, n.idx, n.hash FROM merkle_nodes n
     JOIN unnest($1::smallint[], $2::bigint[]) AS wanted(level, idx) ON n.level = wanted.level AND n.idx = wanted.idx`,
    [ids.map((id) => id.level), ids.map((id) => id.index)],
  )
  for (const [level, idx, hash] of rows) {
    hashes.set(`${level}:${idx}`, hash)
  }
  return hashes
}

/** The three column arrays of `nodes`, as unnest takes them. */
export function nodeArrays(nodes: readonly StoredNode[]): [number[], number[], Buffer[]] {
  return [
    nodes.map((node) => node.level),
    nodes.map((node) => node.index),
    nodes.map((node) => Buffer.from(node.hash.buffer, node.hash.byteOffset, node.hash.byteLength)),
  ]
}

/**
 * The stored nodes completed by leaves [firstLeaf, endLeaf): at each level, the nodes whose last leaf falls in
 * that range. The verifier reads the tree slice by slice with this, alongside the records of the same slice.
 * Each level's run comes back as one bytea of consecutive 32-byte hashes, so a slice of 8,192 records costs a
 * dozen rows rather than 16,000; a level with a node missing (a damaged tree) is read node by node instead.
 */
export async function readNodesCompletedIn(
  db: Queryable,
  firstLeaf: number,
  endLeaf: number,
): Promise<NodeLookup> {
  const levels: number[] = []
  const from: number[] = []
  const to: number[] = []
  for (let level = 0; 2 ** level <= endLeaf; level++) {
    const width = 2 ** level
    // Node i at this level completes with leaf (i + 1) * width - 1.
    const lo = Math.ceil((firstLeaf + 1) / width) - 1
    const hi = Math.floor(endLeaf / width) - 1
    if (hi < lo) continue
    levels.push(level)
    from.push(lo)
    to.push(hi)
  }
  const runs: { first: number; hashes: Buffer }[] = []
  const scattered = new Map<number, Map<number, Uint8Array>>()
  if (levels.length === 0) return () => undefined
  // One index range scan per level (a lateral subquery with an aggregate is never flattened into a join, which
  // the planner would answer with a scan of the whole table).
  const rows = await queryArrays<[number, number, number, number, Buffer | null]>(
    db,
    `SELECT r.level, r.lo, r.hi, n.count, n.hashes
     FROM unnest($1::smallint[], $2::bigint[], $3::bigint[]) AS r(level, lo, hi)
     CROSS JOIN LATERAL (
       SELECT count(*)::int AS count, string_agg(m.hash, ''::bytea ORDER BY m.idx) AS hashes
       FROM merkle_nodes m WHERE m.level = r.level AND m.idx BETWEEN r.lo AND r.hi
     ) n`,
    [levels, from, to],
  )
  for (const [level, lo, hi, count, hashes] of rows) {
    // idx is unique per level: as many nodes as the range is wide means every one is there, in order.
    if (count === hi - lo + 1 && hashes) runs[level] = { first: lo, hashes }
    else scattered.set(level, await nodesOfLevel(db, level, lo, hi))
  }
  return (level, index) => {
    const run = runs[level]
    if (run === undefined) return scattered.get(level)?.get(index)
    const offset = (index - run.first) * HASH_BYTES
    if (offset < 0 || offset >= run.hashes.length) return undefined
    return run.hashes.subarray(offset, offset + HASH_BYTES)
  }
}

const HASH_BYTES = 32

async function nodesOfLevel(
  db: Queryable,
  level: number,
  lo: number,
  hi: number,
): Promise<Map<number, Uint8Array>> {
  const rows = await queryArrays<[number, Buffer]>(
    db,
    'SELECT idx, hash FROM merkle_nodes WHERE level = $1 AND idx BETWEEN $2 AND $3',
    [level, lo, hi],
  )
  return new Map(rows)
}

/** Every stored node above `level`, keyed `(level − above):idx` (the verifier's tree over chunk roots). */
export async function readNodesAbove(db: Queryable, above: number): Promise<Map<string, Uint8Array>> {
  const rows = await queryArrays<[number, number, Buffer]>(
    db,
    'SELECT level, idx, hash FROM merkle_nodes WHERE level > $1',
    [above],
  )
  return new Map(rows.map(([level, idx, hash]) => [`${level - above}:${idx}`, hash]))
}
