import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { emptyRoot, leafHash, nodeHash, rootFromLeafHashes } from '../src/node.ts'
import { b64, fromHex, goldenLeafHashes, hex, readVector } from './vectors.ts'

interface Constants {
  leafInputs: string[]
  nodeHashes: string[][]
  rootHashes: string[]
}
interface GoldenRoots {
  roots: { size: number; root: string }[]
}

const constants = readVector<Constants>('merkle/constants.json')
const leafHashes = constants.leafInputs.map((input) => leafHash(fromHex(input)))

describe('RFC 9162 hashing', () => {
  it('hashes the empty tree as SHA-256 of nothing', () => {
    assert.equal(hex(emptyRoot()), constants.rootHashes[0])
  })

  it('hashes each leaf input as SHA-256(0x00 ‖ input)', () => {
    assert.deepEqual(leafHashes.map(hex), constants.nodeHashes[0])
  })

  it('hashes each perfect node as SHA-256(0x01 ‖ left ‖ right)', () => {
    for (let level = 1; level < constants.nodeHashes.length; level++) {
      const below = constants.nodeHashes[level - 1]!.map(fromHex)
      const expected = constants.nodeHashes[level]!
      expected.forEach((node, index) => {
        assert.equal(hex(nodeHash(below[2 * index]!, below[2 * index + 1]!)), node, `node ${level}:${index}`)
      })
    }
  })

  it('gives the published root for every size from 0 to 8', () => {
    constants.rootHashes.forEach((root, size) => {
      assert.equal(hex(rootFromLeafHashes(leafHashes.slice(0, size))), root, `size ${size}`)
    })
  })

  it('gives the published roots of the golden trees up to 65535 leaves', () => {
    const { roots } = readVector<GoldenRoots>('merkle/golden-roots.json')
    const leaves = goldenLeafHashes(65535)
    for (const { size, root } of roots.filter((r) => r.size > 0)) {
      assert.equal(hex(rootFromLeafHashes(leaves.slice(0, size))), hex(b64(root)), `size ${size}`)
    }
  })

  it("matches the go.sum database's record hash of a leaf", () => {
    const tree = readVector<{ leafInput: string; body: string }>('checkpoint/golang-mod-sumdb-tree.json')
    const root = tree.body.split('\n')[2]!
    assert.equal(hex(leafHash(Buffer.from(tree.leafInput))), hex(b64(root)))
  })

  it('never confuses a leaf with an interior node over the same bytes', () => {
    const [a, b] = [leafHashes[1]!, leafHashes[2]!]
    assert.notEqual(hex(leafHash(Buffer.concat([a, b]))), hex(nodeHash(a, b)))
  })
})
