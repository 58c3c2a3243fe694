import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  appendLeaves,
  type CompactRange,
  compactRangeFromNodes,
  compactRangeRoot,
  EMPTY_COMPACT_RANGE,
  nodeKey,
  rootFromLeafHashes,
  type StoredNode,
} from '../src/node.ts'
import { subtreeRoot } from '../src/rfc9162.ts'
import { b64, goldenLeafHashes, hex, readVector, referenceLeafHashes } from './vectors.ts'

interface Constants {
  nodeHashes: string[][]
  rootHashes: string[]
  compactTrees: [number, number][][]
}

const leaves = goldenLeafHashes(2048)

function appendOneByOne(hashes: readonly Uint8Array[]): { range: CompactRange; nodes: StoredNode[] } {
  let range = EMPTY_COMPACT_RANGE
  const nodes: StoredNode[] = []
  for (const leaf of hashes) {
    const step = appendLeaves(range, [leaf])
    range = step.range
    nodes.push(...step.nodes)
  }
  return { range, nodes }
}

const describeNodes = (nodes: readonly StoredNode[]): string[] =>
  nodes.map((n) => `${nodeKey(n)}=${hex(n.hash)}`)

describe('compact range', () => {
  it('holds the right-edge hashes and root transparency-dev/merkle publishes for sizes 0 to 8', () => {
    const constants = readVector<Constants>('merkle/constants.json')
    const reference = referenceLeafHashes()
    for (let size = 0; size <= 8; size++) {
      const { range } = appendLeaves(EMPTY_COMPACT_RANGE, reference.slice(0, size))
      const expected = constants.compactTrees[size]!.map(
        ([level, index]) => constants.nodeHashes[level]![index]!,
      )
      assert.deepEqual(range.hashes.map(hex), expected, `size ${size}`)
      assert.equal(hex(compactRangeRoot(range)), constants.rootHashes[size], `size ${size}`)
    }
  })

  it('gives the published golden roots up to 65535 leaves', () => {
    const golden = readVector<{ roots: { size: number; root: string }[] }>('merkle/golden-roots.json').roots
    const all = goldenLeafHashes(65535)
    let range = EMPTY_COMPACT_RANGE
    for (const { size, root } of golden.filter((g) => g.size > 0)) {
      range = appendLeaves(range, all.slice(range.size, size)).range
      assert.equal(hex(compactRangeRoot(range)), hex(b64(root)), `size ${size}`)
    }
  })

  it('has the reference root at every prefix', () => {
    let range = EMPTY_COMPACT_RANGE
    for (let size = 0; size <= 600; size++) {
      assert.equal(
        hex(compactRangeRoot(range)),
        hex(rootFromLeafHashes(leaves.slice(0, size))),
        `size ${size}`,
      )
      range = appendLeaves(range, [leaves[size]!]).range
    }
  })

  it('stores each leaf and then each node it completes, every one the hash of the leaves it covers', () => {
    const { nodes } = appendLeaves(EMPTY_COMPACT_RANGE, leaves.slice(0, 6))
    assert.deepEqual(nodes.map(nodeKey), [
      '0:0',
      '0:1',
      '1:0',
      '0:2',
      '0:3',
      '1:1',
      '2:0',
      '0:4',
      '0:5',
      '1:2',
    ])
    for (const node of appendLeaves(EMPTY_COMPACT_RANGE, leaves).nodes) {
      const begin = node.index * 2 ** node.level
      assert.equal(hex(node.hash), hex(subtreeRoot(leaves, begin, begin + 2 ** node.level)), nodeKey(node))
    }
  })

  it('stores every perfect node exactly once: 2n − popcount(n) nodes for n leaves', () => {
    for (const size of [1, 2, 3, 7, 8, 100, 1000, 2048]) {
      const { nodes } = appendLeaves(EMPTY_COMPACT_RANGE, leaves.slice(0, size))
      assert.equal(new Set(nodes.map(nodeKey)).size, nodes.length)
      assert.equal(nodes.length, 2 * size - popcount(size), `size ${size}`)
    }
  })

  it('yields the same nodes and range appended in any batches as one leaf at a time', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 12 }), (batchSizes) => {
        let range = EMPTY_COMPACT_RANGE
        const nodes: StoredNode[] = []
        for (const batch of batchSizes) {
          const end = Math.min(range.size + batch, leaves.length)
          const step = appendLeaves(range, leaves.slice(range.size, end))
          range = step.range
          nodes.push(...step.nodes)
        }
        const single = appendOneByOne(leaves.slice(0, range.size))
        assert.deepEqual(describeNodes(nodes), describeNodes(single.nodes))
        assert.deepEqual(range.hashes.map(hex), single.range.hashes.map(hex))
      }),
      { numRuns: 60 },
    )
  })

  it('resumes from stored nodes as if it had never stopped', () => {
    const { nodes } = appendLeaves(EMPTY_COMPACT_RANGE, leaves.slice(0, 1000))
    const stored = new Map(nodes.map((n) => [nodeKey(n), n.hash]))
    for (const size of [0, 1, 5, 512, 999, 1000]) {
      const resumed = appendLeaves(compactRangeFromNodes(size, stored), leaves.slice(size, 1500))
      const straight = appendLeaves(EMPTY_COMPACT_RANGE, leaves.slice(0, 1500))
      assert.equal(
        hex(compactRangeRoot(resumed.range)),
        hex(compactRangeRoot(straight.range)),
        `from ${size}`,
      )
      assert.deepEqual(
        describeNodes(resumed.nodes),
        describeNodes(straight.nodes.slice(2 * size - popcount(size))),
      )
    }
  })

  it('refuses a leaf hash that is not 32 bytes', () => {
    assert.throws(() => appendLeaves(EMPTY_COMPACT_RANGE, [new Uint8Array(31)]), RangeError)
  })
})

function popcount(n: number): number {
  return n.toString(2).replaceAll('0', '').length
}
