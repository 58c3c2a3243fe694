import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  fromBase64,
  leafHash,
  rootFromInclusionProof,
  type Sha256,
  sameBytes,
  toBase64,
} from '../../console/src/merkle-proof.ts'

const sha256: Sha256 = async (bytes) => new Uint8Array(createHash('sha256').update(bytes).digest())
const h = (...parts: Uint8Array[]) =>
  new Uint8Array(createHash('sha256').update(Buffer.concat(parts)).digest())

// An independent reference, written straight from RFC 9162 section 2.1: MTH and PATH by recursion.
const leaf = (data: Uint8Array) => h(Uint8Array.of(0), data)
const largestPowerOfTwoBelow = (n: number) => 2 ** Math.floor(Math.log2(n - 1))
function mth(leaves: Uint8Array[]): Uint8Array {
  if (leaves.length === 1) return leaf(leaves[0]!)
  const k = largestPowerOfTwoBelow(leaves.length)
  return h(Uint8Array.of(1), mth(leaves.slice(0, k)), mth(leaves.slice(k)))
}
function path(m: number, leaves: Uint8Array[]): Uint8Array[] {
  if (leaves.length === 1) return []
  const k = largestPowerOfTwoBelow(leaves.length)
  return m < k
    ? [...path(m, leaves.slice(0, k)), mth(leaves.slice(k))]
    : [...path(m - k, leaves.slice(k)), mth(leaves.slice(0, k))]
}
const data = (n: number) => Array.from({ length: n }, (_, i) => new TextEncoder().encode(`record ${i + 1}`))

describe('rootFromInclusionProof (RFC 9162 inclusion verification)', () => {
  it('computes leaf hashes with the 0x00 prefix', async () => {
    const input = new TextEncoder().encode('{"seq":1}')
    assert.ok(sameBytes(await leafHash(sha256, input), leaf(input)))
  })

  it('leads every leaf of every tree up to 70 leaves to the tree root', async () => {
    for (let n = 1; n <= 70; n++) {
      const leaves = data(n)
      const root = mth(leaves)
      for (let m = 0; m < n; m++) {
        const computed = await rootFromInclusionProof(sha256, m, n, leaf(leaves[m]!), path(m, leaves))
        assert.ok(computed && sameBytes(computed, root), `leaf ${m} of ${n}`)
      }
    }
  })

  it('never leads a tampered proof, leaf or position to the root', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 2, max: 40 })
          .chain((n) => fc.tuple(fc.constant(n), fc.nat({ max: n - 1 }), fc.nat(), fc.nat({ max: 255 }))),
        async ([n, m, pick, flip]) => {
          const leaves = data(n)
          const root = mth(leaves)
          const proof = path(m, leaves)
          const tampered = proof.map((p) => Uint8Array.from(p))
          const at = pick % tampered.length
          tampered[at]![pick % 32]! ^= flip + 1 > 255 ? 1 : flip + 1
          const viaTamperedProof = await rootFromInclusionProof(sha256, m, n, leaf(leaves[m]!), tampered)
          assert.ok(!viaTamperedProof || !sameBytes(viaTamperedProof, root))
          const otherLeaf = await rootFromInclusionProof(
            sha256,
            m,
            n,
            leaf(new TextEncoder().encode('forged')),
            proof,
          )
          assert.ok(!otherLeaf || !sameBytes(otherLeaf, root))
          const otherIndex = (m + 1) % n
          const moved = await rootFromInclusionProof(sha256, otherIndex, n, leaf(leaves[m]!), proof)
          assert.ok(!moved || !sameBytes(moved, root))
        },
      ),
      { numRuns: 200 },
    )
  })

  it('rejects proofs of the wrong length and positions outside the tree', async () => {
    const leaves = data(8)
    const proof = path(3, leaves)
    assert.equal(await rootFromInclusionProof(sha256, 3, 8, leaf(leaves[3]!), proof.slice(1)), null)
    assert.equal(await rootFromInclusionProof(sha256, 3, 8, leaf(leaves[3]!), [...proof, proof[0]!]), null)
    assert.equal(await rootFromInclusionProof(sha256, 8, 8, leaf(leaves[3]!), proof), null)
    assert.equal(await rootFromInclusionProof(sha256, -1, 8, leaf(leaves[3]!), proof), null)
  })

  it('reads and writes hashes as standard padded base64', () => {
    const bytes = h(new TextEncoder().encode('x'))
    assert.equal(toBase64(bytes), Buffer.from(bytes).toString('base64'))
    assert.ok(sameBytes(fromBase64(Buffer.from(bytes).toString('base64')), bytes))
  })
})
