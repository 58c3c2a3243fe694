import { type NodeHashes, type NodeId, nodeKey, rootNodes } from './proof-nodes.ts'
import { emptyRoot, HASH_SIZE, nodeHash } from './rfc9162.ts'

/**
 * The right edge of a tree of `size` leaves: the hashes of its perfect decomposition (`rootNodes(size)`),
 * largest first. O(log n) state is all it takes to append leaves and compute the root.
 */
export interface CompactRange {
  readonly size: number
  readonly hashes: readonly Uint8Array[]
}

/** A perfect node and its hash, to store once it is complete (it never changes afterwards). */
export interface StoredNode extends NodeId {
  readonly hash: Uint8Array
}

export const EMPTY_COMPACT_RANGE: CompactRange = { size: 0, hashes: [] }

/**
 * Appends leaf hashes. Returns the extended range and every node the append completed — each leaf
 * (level 0) followed by the ancestors it completes — which is exactly what a log must store to answer
 * proofs from `proof-nodes` afterwards. Appending in batches yields the same nodes as one at a time.
 */
export function appendLeaves(
  range: CompactRange,
  leafHashes: readonly Uint8Array[],
): { range: CompactRange; nodes: StoredNode[] } {
  const hashes = [...range.hashes]
  const nodes: StoredNode[] = []
  let size = range.size
  for (const leaf of leafHashes) {
    if (leaf.length !== HASH_SIZE) throw new RangeError(`a leaf hash must be ${HASH_SIZE} bytes`)
    if (!Number.isSafeInteger(size + 1)) throw new RangeError('the tree cannot grow past 2^53 − 1 leaves')
    let node: StoredNode = { level: 0, index: size, hash: leaf }
    nodes.push(node)
    // A right child completes its parent: merge while the new node is one.
    while (node.index % 2 === 1) {
      const left = hashes.pop()!
      node = { level: node.level + 1, index: (node.index - 1) / 2, hash: nodeHash(left, node.hash) }
      nodes.push(node)
    }
    hashes.push(node.hash)
    size++
  }
  return { range: { size, hashes }, nodes }
}

/** The root of the tree the range describes: its subtrees hashed together from the right, as the RFC splits. */
export function compactRangeRoot(range: CompactRange): Uint8Array {
  const { hashes } = range
  if (hashes.length === 0) return emptyRoot()
  let root = hashes[hashes.length - 1]!
  for (let i = hashes.length - 2; i >= 0; i--) root = nodeHash(hashes[i]!, root)
  return root
}

/** Rebuilds the range of a stored tree from the hashes of `rootNodes(size)`, e.g. when a sequencer restarts. */
export function compactRangeFromNodes(size: number, hashes: NodeHashes): CompactRange {
  return {
    size,
    hashes: rootNodes(size).map((id) => {
      const hash = hashes.get(nodeKey(id))
      if (hash === undefined) throw new RangeError(`node ${nodeKey(id)} is missing`)
      return hash
    }),
  }
}
