import type { NodeHashes, NodeId, StoredNode } from '../../log/transparency.ts'
import { queryArrays } from '../array-rows.ts'
import type { Queryable } from '../pool.ts'

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

/** Inserts nodes; a node that exists already is an error (the primary key refuses it): the tree never forks. */
export async function insertNodes(db: Queryable, nodes: readonly StoredNode[]): Promise<void> {
  if (nodes.length === 0) return
  await db.query(
    `INSERT INTO merkle_nodes (level, idx, hash)
     SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::bytea[])`,
    nodeArrays(nodes),
  )
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
 */
export async function readNodesCompletedIn(
  db: Queryable,
  firstLeaf: number,
  endLeaf: number,
): Promise<NodeHashes> {
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
  const hashes = new Map<string, Uint8Array>()
  if (levels.length === 0) return hashes
  const rows = await queryArrays<[number, number, Buffer]>(
    db,
    `SELECT n.level, n.idx, n.hash FROM unnest($1::smallint[], $2::bigint[], $3::bigint[]) AS r(level, lo, hi)
     JOIN merkle_nodes n ON n.level = r.level AND n.idx BETWEEN r.lo AND r.hi`,
    [levels, from, to],
  )
  for (const [level, idx, hash] of rows) {
    hashes.set(`${level}:${idx}`, hash)
  }
  return hashes
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
