import { emptyRoot, nodeHash } from './rfc9162.ts'

/**
 * A perfect subtree: the node at `level` covering leaves [index·2^level, (index+1)·2^level). Level 0 nodes
 * are the leaf hashes. A log that stores every perfect node can answer any proof or root from O(log n) of
 * them, because every hash the RFC asks for is either a perfect node or a right-edge subtree made of a few.
 */
export interface NodeId {
  readonly level: number
  readonly index: number
}

/**
 * How to build a proof from stored nodes: one entry per proof hash, bottom to top. An entry lists the
 * perfect nodes covering that hash's leaves, left to right: a single node is the hash itself; several are a
 * subtree cut by the tree's right edge, hashed together by `hashOfNodes`.
 */
export type ProofPlan = readonly (readonly NodeId[])[]

/** Stored node hashes keyed by `nodeKey`. */
export type NodeHashes = ReadonlyMap<string, Uint8Array>

export function nodeKey(id: NodeId): string {
  return `${id.level}:${id.index}`
}

/** The perfect nodes covering [begin, end), left to right, each as large as its position allows. */
export function perfectNodes(begin: number, end: number): NodeId[] {
  const nodes: NodeId[] = []
  let at = begin
  while (at < end) {
    let level = 0
    while (at % 2 ** (level + 1) === 0 && at + 2 ** (level + 1) <= end) level++
    nodes.push({ level, index: at / 2 ** level })
    at += 2 ** level
  }
  return nodes
}

/** The nodes whose hashes make the root of a tree of `treeSize` leaves: its perfect decomposition. */
export function rootNodes(treeSize: number): NodeId[] {
  assertSize(treeSize, 'tree size')
  return perfectNodes(0, treeSize)
}

/** The plan of the inclusion proof of leaf `leafIndex` in the tree of `treeSize` leaves. */
export function inclusionProofNodes(leafIndex: number, treeSize: number): ProofPlan {
  assertSize(treeSize, 'tree size')
  assertSize(leafIndex, 'leaf index')
  if (leafIndex >= treeSize) {
    throw new RangeError(`leaf index ${leafIndex} is outside a tree of size ${treeSize}`)
  }
  return pathNodes({ level: 0, index: leafIndex }, treeSize)
}

/** The plan of the consistency proof from the tree of `size1` leaves to the tree of `size2` (0 < size1 ≤ size2). */
export function consistencyProofNodes(size1: number, size2: number): ProofPlan {
  assertSize(size1, 'first size')
  assertSize(size2, 'second size')
  if (size1 === 0 || size1 > size2) {
    throw new RangeError(`no consistency proof from size ${size1} to ${size2}`)
  }
  if (size1 === size2) return []
  // The proof climbs from the last perfect subtree of the first tree, through the second tree.
  let level = 0
  while ((size1 / 2 ** level) % 2 === 0) level++
  const last = { level, index: size1 / 2 ** level - 1 }
  const path = pathNodes(last, size2)
  // When the first tree is itself perfect, that subtree is its root, which the verifier already holds.
  return last.index === 0 ? path : [[last], ...path]
}

/** Every node a plan reads, once each: what to fetch in one query. */
export function nodesToFetch(plan: ProofPlan): NodeId[] {
  const unique = new Map(plan.flat().map((id) => [nodeKey(id), id]))
  return [...unique.values()]
}

/** The proof hashes of a plan, from the hashes of `nodesToFetch(plan)`. */
export function proofFromNodes(plan: ProofPlan, hashes: NodeHashes): Uint8Array[] {
  return plan.map((entry) => hashOfNodes(entry, hashes))
}

/** The root of the tree of `treeSize` leaves, from the hashes of `rootNodes(treeSize)`. */
export function rootFromNodes(treeSize: number, hashes: NodeHashes): Uint8Array {
  const nodes = rootNodes(treeSize)
  return nodes.length === 0 ? emptyRoot() : hashOfNodes(nodes, hashes)
}

/**
 * The hash of the subtree made of adjacent perfect nodes listed left to right, each smaller than the one
 * before: the RFC splits such a subtree after its first node, so it folds from the right.
 */
export function hashOfNodes(nodes: readonly NodeId[], hashes: NodeHashes): Uint8Array {
  const lookup = (id: NodeId): Uint8Array => {
    const hash = hashes.get(nodeKey(id))
    if (hash === undefined) throw new RangeError(`node ${nodeKey(id)} is missing`)
    return hash
  }
  if (nodes.length === 0) throw new RangeError('a subtree needs at least one node')
  let hash = lookup(nodes[nodes.length - 1]!)
  for (let i = nodes.length - 2; i >= 0; i--) hash = nodeHash(lookup(nodes[i]!), hash)
  return hash
}

/**
 * The proof that the perfect node `start` is in the tree of `treeSize` leaves. Climbing from `start`, each
 * sibling is a perfect node until the first right sibling the tree's edge cuts short; that sibling is the
 * right-edge subtree [its begin, treeSize), and every hash above it is a left sibling: the perfect nodes
 * left of `start`'s ancestor there, smallest first.
 */
function pathNodes(start: NodeId, treeSize: number): ProofPlan {
  const plan: NodeId[][] = []
  let { level, index } = start
  for (;;) {
    const width = 2 ** level
    if (index % 2 === 1) {
      plan.push([{ level, index: index - 1 }])
    } else if ((index + 2) * width <= treeSize) {
      plan.push([{ level, index: index + 1 }])
    } else {
      const siblingBegin = (index + 1) * width
      if (siblingBegin < treeSize) plan.push(perfectNodes(siblingBegin, treeSize))
      for (const left of perfectNodes(0, index * width).reverse()) plan.push([left])
      return plan
    }
    level++
    index = Math.floor(index / 2)
  }
}

function assertSize(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what} must be an integer ≥ 0, got ${n}`)
}
