import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  consistencyProof,
  inclusionProof,
  ProofError,
  rootFromInclusionProof,
  rootFromLeafHashes,
  verifyConsistency,
  verifyInclusion,
} from '../src/node.ts'
import type { ConsistencyVector, InclusionVector } from './vector-suite.ts'
import { b64, hex, readVectorDir, referenceLeafHashes } from './vectors.ts'

const inclusionVectors = readVectorDir<InclusionVector>('merkle/inclusion')
const consistencyVectors = readVectorDir<ConsistencyVector>('merkle/consistency')
const leaves = referenceLeafHashes()

function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const copy = Uint8Array.from(bytes)
  copy[bit >> 3]! ^= 1 << (bit & 7)
  return copy
}

describe('verifyInclusion', () => {
  it('agrees with every transparency-dev/merkle inclusion vector, refusing each failure case', () => {
    assert.ok(inclusionVectors.length > 70)
    assert.ok(inclusionVectors.some(([, v]) => v.wantErr) && inclusionVectors.some(([, v]) => !v.wantErr))
    for (const [file, v] of inclusionVectors) {
      const proof = (v.proof ?? []).map(b64)
      const ok = verifyInclusion(v.leafIdx, v.treeSize, b64(v.leafHash), proof, b64(v.root))
      assert.equal(ok, !v.wantErr, `${file}: ${v.desc}`)
    }
  })

  it('refuses a proof whose hash is one bit off', () => {
    const proof = inclusionProof(2, leaves)
    const root = rootFromLeafHashes(leaves)
    assert.ok(verifyInclusion(2, 8, leaves[2]!, proof, root))
    for (let bit = 0; bit < 256; bit += 37) {
      assert.ok(!verifyInclusion(2, 8, leaves[2]!, [proof[0]!, flipBit(proof[1]!, bit), proof[2]!], root))
    }
  })

  it('refuses indices and sizes that are not safe integers ≥ 0', () => {
    const root = rootFromLeafHashes(leaves.slice(0, 1))
    for (const [index, size] of [
      [-1, 1],
      [0.5, 1],
      [0, Number.NaN],
      [0, 2 ** 64],
    ] as const) {
      assert.ok(!verifyInclusion(index, size, leaves[0]!, [], root), `${index}, ${size}`)
    }
  })
})

describe('rootFromInclusionProof', () => {
  it('recomputes the root the proof leads to', () => {
    assert.equal(
      hex(rootFromInclusionProof(5, 8, leaves[5]!, inclusionProof(5, leaves))),
      hex(rootFromLeafHashes(leaves)),
    )
  })

  it('throws ProofError for a proof of the wrong length', () => {
    const proof = inclusionProof(5, leaves)
    assert.throws(() => rootFromInclusionProof(5, 8, leaves[5]!, proof.slice(1)), ProofError)
    assert.throws(() => rootFromInclusionProof(5, 8, leaves[5]!, [...proof, proof[0]!]), ProofError)
    assert.throws(() => rootFromInclusionProof(8, 8, leaves[5]!, proof), ProofError)
  })
})

describe('verifyConsistency', () => {
  it('agrees with every transparency-dev/merkle consistency vector, refusing each failure case', () => {
    assert.ok(consistencyVectors.length > 80)
    assert.ok(consistencyVectors.some(([, v]) => v.wantErr) && consistencyVectors.some(([, v]) => !v.wantErr))
    for (const [file, v] of consistencyVectors) {
      const proof = (v.proof ?? []).map(b64)
      const ok = verifyConsistency(v.size1, v.size2, proof, b64(v.root1), b64(v.root2))
      assert.equal(ok, !v.wantErr, `${file}: ${v.desc}`)
    }
  })
})

describe('inclusionProof (RFC 9162 PATH)', () => {
  it('reproduces every happy-path inclusion vector of the 8-leaf reference tree', () => {
    const happy = inclusionVectors.filter(([file, v]) => file.endsWith('happy-path.json') && v.treeSize <= 8)
    assert.ok(happy.length >= 5)
    for (const [file, v] of happy) {
      const proof = inclusionProof(v.leafIdx, leaves.slice(0, v.treeSize))
      assert.deepEqual(
        proof.map(hex),
        (v.proof ?? []).map((p) => hex(b64(p))),
        file,
      )
    }
  })

  it('proves every leaf of every tree up to 40 leaves', () => {
    const many = Array.from({ length: 40 }, (_, i) => leaves[i % 8]!.map((byte) => byte ^ (i >> 3)))
    for (let size = 1; size <= many.length; size++) {
      const tree = many.slice(0, size)
      const root = rootFromLeafHashes(tree)
      for (let index = 0; index < size; index++) {
        assert.ok(
          verifyInclusion(index, size, tree[index]!, inclusionProof(index, tree), root),
          `${index}/${size}`,
        )
        if (size > 1)
          assert.ok(
            !verifyInclusion(index, size, tree[(index + 1) % size]!, inclusionProof(index, tree), root),
          )
      }
    }
  })

  it('refuses an index outside the tree', () => {
    assert.throws(() => inclusionProof(8, leaves), ProofError)
    assert.throws(() => inclusionProof(-1, leaves), ProofError)
  })
})

describe('consistencyProof (RFC 9162 PROOF)', () => {
  it('reproduces every happy-path consistency vector of the 8-leaf reference tree', () => {
    const happy = consistencyVectors.filter(([file, v]) => file.endsWith('happy-path.json') && v.size2 <= 8)
    assert.ok(happy.length >= 5)
    for (const [file, v] of happy) {
      const proof = consistencyProof(v.size1, leaves.slice(0, v.size2))
      assert.deepEqual(
        proof.map(hex),
        (v.proof ?? []).map((p) => hex(b64(p))),
        file,
      )
    }
  })

  it('proves every pair of sizes of a tree up to 40 leaves, and no swapped pair', () => {
    const many = Array.from({ length: 40 }, (_, i) => leaves[i % 8]!.map((byte) => byte ^ (i >> 3)))
    const roots = [undefined, ...many.map((_, i) => rootFromLeafHashes(many.slice(0, i + 1)))]
    for (let size2 = 1; size2 <= many.length; size2++) {
      for (let size1 = 1; size1 <= size2; size1++) {
        const proof = consistencyProof(size1, many.slice(0, size2))
        assert.ok(verifyConsistency(size1, size2, proof, roots[size1]!, roots[size2]!), `${size1}→${size2}`)
        if (size1 < size2) assert.ok(!verifyConsistency(size1, size2, proof, roots[size2]!, roots[size1]!))
      }
    }
  })

  it('gives an empty proof between equal sizes and none from the empty tree', () => {
    assert.deepEqual(consistencyProof(8, leaves), [])
    assert.throws(() => consistencyProof(0, leaves), ProofError)
    assert.throws(() => consistencyProof(9, leaves), ProofError)
  })

  it('refuses any proof with one bit flipped', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 7 }),
        fc.nat(),
        fc.integer({ min: 0, max: 255 }),
        (size1, at, bit) => {
          const proof = consistencyProof(size1, leaves)
          const i = at % proof.length
          proof[i] = flipBit(proof[i]!, bit)
          const root1 = rootFromLeafHashes(leaves.slice(0, size1))
          return !verifyConsistency(size1, 8, proof, root1, rootFromLeafHashes(leaves))
        },
      ),
    )
  })
})
