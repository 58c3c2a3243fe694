import { platform } from './platform.ts'

/** Every hash in the tree is a 32-byte SHA-256 digest. */
export const HASH_SIZE = 32

const LEAF_PREFIX = Uint8Array.of(0x00)
const NODE_PREFIX = Uint8Array.of(0x01)

/** The hash of a leaf: SHA-256(0x00 ‖ input). The prefix keeps a leaf from posing as an interior node. */
export function leafHash(input: Uint8Array): Uint8Array {
  return platform.sha256([LEAF_PREFIX, input])
}

/** The hash of an interior node: SHA-256(0x01 ‖ left ‖ right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return platform.sha256([NODE_PREFIX, left, right])
}

/** The root of the empty tree: SHA-256 of no bytes. */
export function emptyRoot(): Uint8Array {
  return platform.sha256([])
}

/** The largest power of two strictly below n (n ≥ 2): where the RFC splits a tree of n leaves. */
export function splitPoint(n: number): number {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

/**
 * MTH over leaf hashes, straight from the RFC's recursive definition. O(n): meant as the reference that
 * the stored-node and compact-range paths are tested against, and for small trees.
 */
export function rootFromLeafHashes(leafHashes: readonly Uint8Array[]): Uint8Array {
  return leafHashes.length === 0 ? emptyRoot() : subtreeRoot(leafHashes, 0, leafHashes.length)
}

/** MTH(D[lo:hi]) for a non-empty range. */
export function subtreeRoot(leafHashes: readonly Uint8Array[], lo: number, hi: number): Uint8Array {
  if (hi - lo === 1) return leafHashes[lo]!
  const k = splitPoint(hi - lo)
  return nodeHash(subtreeRoot(leafHashes, lo, lo + k), subtreeRoot(leafHashes, lo + k, hi))
}
