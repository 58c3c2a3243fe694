import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  appendLeaves,
  consistencyProof,
  consistencyProofNodes,
  EMPTY_COMPACT_RANGE,
  inclusionProof,
  inclusionProofNodes,
  type NodeHashes,
  type NodeId,
  nodeKey,
  nodesToFetch,
  type ProofPlan,
  perfectNodes,
  proofFromNodes,
  rootFromLeafHashes,
  rootFromNodes,
  rootNodes,
  verifyConsistency,
  verifyInclusion,
} from '../src/node.ts'
import { goldenLeafHashes, hex, readVector } from './vectors.ts'

interface NodeTables {
  inclusion: { size: number; index: number; nodes?: [number, number][]; error?: true }[]
  consistency: { size1: number; size2: number; nodes?: [number, number][]; error?: true }[]
}

const MAX_SIZE = 3000
const leaves = goldenLeafHashes(MAX_SIZE)
/** Every perfect node of the largest tree, as a log stores them; smaller trees read a subset. */
const store: NodeHashes = new Map(
  appendLeaves(EMPTY_COMPACT_RANGE, leaves).nodes.map((n) => [nodeKey(n), n.hash]),
)

/** A lookup that holds only the nodes a plan asked for, so a plan that forgets one fails loudly. */
function fetched(ids: readonly NodeId[]): NodeHashes {
  return new Map(ids.map((id) => [nodeKey(id), store.get(nodeKey(id))!]))
}

const sorted = (ids: readonly NodeId[]): string[] => ids.map(nodeKey).sort()

/** The leaves [begin, end) a node covers. */
const coverage = ({ level, index }: NodeId): [number, number] => [
  index * 2 ** level,
  (index + 1) * 2 ** level,
]

describe('inclusionProofNodes', () => {
  it('reads exactly the nodes transparency-dev/merkle reads, for each of its inclusion cases', () => {
    for (const c of readVector<NodeTables>('merkle/proof-nodes.json').inclusion) {
      if (c.error) {
        assert.throws(() => inclusionProofNodes(c.index, c.size), RangeError, `${c.index}/${c.size}`)
        continue
      }
      const plan = inclusionProofNodes(c.index, c.size)
      const expected = c.nodes!.map(([level, index]) => ({ level, index }))
      assert.deepEqual(sorted(nodesToFetch(plan)), sorted(expected), `${c.index}/${c.size}`)
    }
  })

  it('builds from stored nodes the very proof the RFC definition gives, and it verifies', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: MAX_SIZE }).chain((size) => fc.tuple(fc.constant(size), fc.nat(size - 1))),
        ([size, index]) => {
          const plan = inclusionProofNodes(index, size)
          const proof = proofFromNodes(plan, fetched(nodesToFetch(plan)))
          const tree = leaves.slice(0, size)
          assert.deepEqual(proof.map(hex), inclusionProof(index, tree).map(hex))
          assert.ok(verifyInclusion(index, size, leaves[index]!, proof, rootFromLeafHashes(tree)))
        },
      ),
      { numRuns: 100 },
    )
  })

  it('reads O(log n) nodes that, with the leaf, tile the tree exactly — even near 2^53 leaves', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: Number.MAX_SAFE_INTEGER })
          .chain((size) => fc.tuple(fc.constant(size), fc.nat(size - 1))),
        ([size, index]) => {
          const ids = nodesToFetch(inclusionProofNodes(index, size))
          assert.ok(ids.length <= 2 * Math.ceil(Math.log2(size + 1)))
          const tiles = [...ids, { level: 0, index }].map(coverage).sort((a, b) => a[0] - b[0])
          let at = 0
          for (const [begin, end] of tiles) {
            assert.equal(begin, at)
            at = end
          }
          assert.equal(at, size)
        },
      ),
    )
  })
})

describe('consistencyProofNodes', () => {
  it('reads exactly the nodes transparency-dev/merkle reads, for each of its consistency cases', () => {
    for (const c of readVector<NodeTables>('merkle/proof-nodes.json').consistency) {
      if (c.error) {
        assert.throws(() => consistencyProofNodes(c.size1, c.size2), RangeError, `${c.size1}→${c.size2}`)
        continue
      }
      const plan = consistencyProofNodes(c.size1, c.size2)
      const expected = c.nodes!.map(([level, index]) => ({ level, index }))
      assert.deepEqual(sorted(nodesToFetch(plan)), sorted(expected), `${c.size1}→${c.size2}`)
    }
  })

  it('builds from stored nodes the very proof the RFC definition gives, and it verifies', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: MAX_SIZE })
          .chain((size2) => fc.tuple(fc.integer({ min: 1, max: size2 }), fc.constant(size2))),
        ([size1, size2]) => {
          const plan = consistencyProofNodes(size1, size2)
          const proof = proofFromNodes(plan, fetched(nodesToFetch(plan)))
          assert.deepEqual(proof.map(hex), consistencyProof(size1, leaves.slice(0, size2)).map(hex))
          const root1 = rootFromLeafHashes(leaves.slice(0, size1))
          const root2 = rootFromLeafHashes(leaves.slice(0, size2))
          assert.ok(verifyConsistency(size1, size2, proof, root1, root2))
        },
      ),
      { numRuns: 100 },
    )
  })

  it('gives an empty plan between equal sizes', () => {
    assert.deepEqual(consistencyProofNodes(5, 5), [])
  })
})

describe('rootNodes and rootFromNodes', () => {
  it('compute every root from its perfect decomposition', () => {
    for (let size = 0; size <= 300; size++) {
      const root = rootFromNodes(size, fetched(rootNodes(size)))
      assert.equal(hex(root), hex(rootFromLeafHashes(leaves.slice(0, size))), `size ${size}`)
    }
  })

  it('decompose a size into one node per set bit, largest first', () => {
    assert.deepEqual(rootNodes(13), [
      { level: 3, index: 0 },
      { level: 2, index: 2 },
      { level: 0, index: 12 },
    ])
    assert.deepEqual(rootNodes(0), [])
  })

  it('refuse a missing node instead of hashing around it', () => {
    const partial = new Map(fetched(rootNodes(13)))
    partial.delete(nodeKey({ level: 2, index: 2 }))
    assert.throws(() => rootFromNodes(13, partial), /node 2:2 is missing/)
  })
})

describe('perfectNodes', () => {
  it('covers any range with aligned perfect nodes, left to right', () => {
    assert.deepEqual(perfectNodes(5, 16), [
      { level: 0, index: 5 },
      { level: 1, index: 3 },
      { level: 3, index: 1 },
    ])
  })
})

describe('nodesToFetch', () => {
  it('lists each node of a plan once', () => {
    const node = { level: 1, index: 0 }
    const plan: ProofPlan = [[node], [node, { level: 0, index: 2 }]]
    assert.deepEqual(nodesToFetch(plan), [node, { level: 0, index: 2 }])
  })
})
