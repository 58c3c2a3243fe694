import { HASH_SIZE, nodeHash, splitPoint, subtreeRoot } from './rfc9162.ts'

/** A proof that cannot be evaluated at all (index outside the tree, hash of the wrong length, wrong length). */
export class ProofError extends Error {
  override name = 'ProofError'
}

/**
 * The inclusion proof PATH(m, D[n]) of leaf `leafIndex` in the tree over `leafHashes`, bottom to top.
 * The RFC's recursive definition over every leaf, O(n): the reference for proofs built from stored nodes.
 */
export function inclusionProof(leafIndex: number, leafHashes: readonly Uint8Array[]): Uint8Array[] {
  if (!isIndex(leafIndex) || leafIndex >= leafHashes.length) {
    throw new ProofError(`leaf index ${leafIndex} is outside a tree of size ${leafHashes.length}`)
  }
  const path = (m: number, lo: number, hi: number): Uint8Array[] => {
    if (hi - lo === 1) return []
    const k = splitPoint(hi - lo)
    return m < k
      ? [...path(m, lo, lo + k), subtreeRoot(leafHashes, lo + k, hi)]
      : [...path(m - k, lo + k, hi), subtreeRoot(leafHashes, lo, lo + k)]
  }
  return path(leafIndex, 0, leafHashes.length)
}

/**
 * The consistency proof PROOF(m, D[n]) from the tree of the first `size1` leaves to the tree over all
 * `leafHashes`; empty when both sizes are equal. The RFC's recursive definition, O(n), as above.
 */
export function consistencyProof(size1: number, leafHashes: readonly Uint8Array[]): Uint8Array[] {
  if (!isIndex(size1) || size1 === 0 || size1 > leafHashes.length) {
    throw new ProofError(`no consistency proof from size ${size1} to size ${leafHashes.length}`)
  }
  // SUBPROOF(m, D[lo:hi], b); `knownRoot` is b: whether the verifier already holds MTH(D[lo:hi]).
  const subproof = (m: number, lo: number, hi: number, knownRoot: boolean): Uint8Array[] => {
    if (m === hi - lo) return knownRoot ? [] : [subtreeRoot(leafHashes, lo, hi)]
    const k = splitPoint(hi - lo)
    return m <= k
      ? [...subproof(m, lo, lo + k, knownRoot), subtreeRoot(leafHashes, lo + k, hi)]
      : [...subproof(m - k, lo + k, hi, false), subtreeRoot(leafHashes, lo, lo + k)]
  }
  return subproof(size1, 0, leafHashes.length, true)
}

/**
 * The root that an inclusion proof leads to, by the RFC 9162 §2.1.3.2 verification loop. Throws ProofError
 * when the proof cannot belong to (leafIndex, treeSize) at all.
 */
export function rootFromInclusionProof(
  leafIndex: number,
  treeSize: number,
  leafHash: Uint8Array,
  proof: readonly Uint8Array[],
): Uint8Array {
  if (!isIndex(leafIndex) || !isIndex(treeSize) || leafIndex >= treeSize) {
    throw new ProofError(`leaf index ${leafIndex} is outside a tree of size ${treeSize}`)
  }
  if (leafHash.length !== HASH_SIZE || !proof.every((p) => p.length === HASH_SIZE)) {
    throw new ProofError(`every hash must be ${HASH_SIZE} bytes`)
  }
  let fn = leafIndex
  let sn = treeSize - 1
  let r = leafHash
  for (const p of proof) {
    if (sn === 0) throw new ProofError('the proof is longer than the path to the root')
    if (isOdd(fn) || fn === sn) {
      r = nodeHash(p, r)
      // Skip the levels where the node on the right edge has no sibling.
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn)
        sn = half(sn)
      }
    } else {
      r = nodeHash(r, p)
    }
    fn = half(fn)
    sn = half(sn)
  }
  if (sn !== 0) throw new ProofError('the proof is shorter than the path to the root')
  return r
}

/** RFC 9162 §2.1.3.2: whether `proof` shows the leaf at `leafIndex` in the tree of `treeSize` with `root`. */
export function verifyInclusion(
  leafIndex: number,
  treeSize: number,
  leafHash: Uint8Array,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  try {
    return bytesEqual(rootFromInclusionProof(leafIndex, treeSize, leafHash, proof), root)
  } catch (err) {
    if (err instanceof ProofError) return false
    throw err
  }
}

/**
 * RFC 9162 §2.1.4.2: whether `proof` shows the tree of `size2` with `root2` extends the tree of `size1`
 * with `root1`. Equal sizes need an empty proof and equal roots; a proof from the empty tree proves
 * nothing and is refused (both as transparency-dev/merkle does).
 */
export function verifyConsistency(
  size1: number,
  size2: number,
  proof: readonly Uint8Array[],
  root1: Uint8Array,
  root2: Uint8Array,
): boolean {
  if (!isIndex(size1) || !isIndex(size2) || size2 < size1 || size1 === 0) return false
  if (size1 === size2) return proof.length === 0 && bytesEqual(root1, root2)
  if (proof.length === 0 || !proof.every((p) => p.length === HASH_SIZE)) return false

  // A power-of-two first tree is a whole subtree of the second: the verifier already holds its hash.
  const path = isPowerOfTwo(size1) ? [root1, ...proof] : proof
  let fn = size1 - 1
  let sn = size2 - 1
  while (isOdd(fn)) {
    fn = half(fn)
    sn = half(sn)
  }
  let fr = path[0]!
  let sr = path[0]!
  for (const c of path.slice(1)) {
    if (sn === 0) return false
    if (isOdd(fn) || fn === sn) {
      fr = nodeHash(c, fr)
      sr = nodeHash(c, sr)
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn)
        sn = half(sn)
      }
    } else {
      sr = nodeHash(sr, c)
    }
    fn = half(fn)
    sn = half(sn)
  }
  return sn === 0 && bytesEqual(fr, root1) && bytesEqual(sr, root2)
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

// Sizes and indices are plain numbers up to 2^53 − 1, so the bit arithmetic below avoids JavaScript's
// 32-bit bitwise operators, which would silently wrap above 2^31.
function isIndex(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0
}

function isOdd(n: number): boolean {
  return n % 2 === 1
}

function half(n: number): number {
  return Math.floor(n / 2)
}

function isPowerOfTwo(n: number): boolean {
  let m = n
  while (m > 1 && m % 2 === 0) m /= 2
  return m === 1
}
