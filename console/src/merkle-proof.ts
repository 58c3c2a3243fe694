/**
 * RFC 9162 inclusion-proof verification (section 2.1.3.2), with the hash function passed in so the same code
 * runs on WebCrypto in the browser and on node:crypto in tests. Hashes are 32-byte arrays.
 */
export type Sha256 = (bytes: Uint8Array) => Promise<Uint8Array>

export async function leafHash(sha256: Sha256, leafInput: Uint8Array): Promise<Uint8Array> {
  return sha256(concat(Uint8Array.of(0x00), leafInput))
}

async function nodeHash(sha256: Sha256, left: Uint8Array, right: Uint8Array): Promise<Uint8Array> {
  return sha256(concat(Uint8Array.of(0x01), left, right))
}

/**
 * The root that `proof` leads to from the leaf at `leafIndex` in a tree of `treeSize` leaves, or null when the
 * proof has the wrong length for that position (which no valid proof has).
 */
export async function rootFromInclusionProof(
  sha256: Sha256,
  leafIndex: number,
  treeSize: number,
  leaf: Uint8Array,
  proof: Uint8Array[],
): Promise<Uint8Array | null> {
  if (!Number.isSafeInteger(leafIndex) || !Number.isSafeInteger(treeSize)) return null
  if (leafIndex < 0 || leafIndex >= treeSize) return null
  // Plain arithmetic rather than bit operators: indexes may exceed 32 bits.
  let fn = leafIndex
  let sn = treeSize - 1
  let r = leaf
  for (const p of proof) {
    if (sn === 0) return null
    if (fn % 2 === 1 || fn === sn) {
      r = await nodeHash(sha256, p, r)
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2)
        sn = Math.floor(sn / 2)
      }
    } else {
      r = await nodeHash(sha256, r, p)
    }
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  return sn === 0 ? r : null
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i])
}

export function fromBase64(text: string): Uint8Array {
  const binary = atob(text)
  return Uint8Array.from(binary, (c) => c.charCodeAt(0))
}

export function toBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}
