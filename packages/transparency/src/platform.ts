import { sha256 as sha256Js } from '@noble/hashes/sha2'

/**
 * A node:crypto KeyObject, described by the members this package reads, so that its types do not need Node's: the
 * Node build signs notes with one, and either build takes one wherever an Ed25519 key is asked for.
 */
export interface KeyObjectLike {
  readonly type: string
  readonly asymmetricKeyType?: string | undefined
  export(options: { format: 'jwk' }): { x?: string | undefined }
}

/**
 * What the code needs of its host. The portable one (SHA-256 in JavaScript, Ed25519 through WebCrypto) runs
 * anywhere; the Node build replaces it at load with node:crypto, which hashes a tree several times faster and
 * verifies and signs Ed25519 without waiting.
 */
export interface Platform {
  /** SHA-256 of the parts, concatenated. Synchronous: a tree is hashed node by node, millions at a time. */
  sha256(parts: readonly Uint8Array[]): Uint8Array
  /** Standard padded base64 of the bytes. */
  encodeBase64(bytes: Uint8Array): string
  /** The bytes of base64 text already known to be canonical. */
  decodeBase64(text: string): Uint8Array
  /** Ed25519 verification without awaiting, where the host offers it (Node); undefined elsewhere. */
  readonly verifyEd25519Sync?: (publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array) => boolean
  /** Ed25519 signing with a node:crypto private key, where the host has one (Node); undefined elsewhere. */
  readonly signEd25519?: (privateKey: KeyObjectLike, message: Uint8Array) => Uint8Array
}

const portable: Platform = {
  sha256(parts) {
    if (parts.length === 1) return sha256Js(parts[0]!)
    const hash = sha256Js.create()
    for (const part of parts) hash.update(part)
    return hash.digest()
  },
  encodeBase64(bytes) {
    let binary = ''
    // In slices: String.fromCharCode takes its bytes as arguments, and arguments are limited in number.
    for (let i = 0; i < bytes.length; i += 0x8000) {
      binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
    }
    return btoa(binary)
  },
  decodeBase64(text) {
    const binary = atob(text)
    const bytes = new Uint8Array(binary.length)
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
    return bytes
  },
}

/** The host's primitives; a live binding, so the Node build's replacement reaches every module. */
export let platform: Platform = portable

export function usePlatform(next: Platform): void {
  platform = next
}

/**
 * Ed25519 verification through WebCrypto (browsers since 2025, Node 20). A signature of the wrong length is not a
 * valid signature; a host whose WebCrypto lacks Ed25519 is named as such, not taken for a bad signature.
 */
export async function verifyEd25519(
  publicKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
): Promise<boolean> {
  const subtle = globalThis.crypto?.subtle
  if (subtle === undefined) throw new Error('Ed25519 verification needs WebCrypto (a secure context)')
  const key = await subtle
    .importKey('raw', asBuffer(publicKey), { name: 'Ed25519' }, false, ['verify'])
    .catch((err: Error) => {
      throw new Error(`this host's WebCrypto cannot import an Ed25519 key: ${err.message}`)
    })
  try {
    return await subtle.verify({ name: 'Ed25519' }, key, asBuffer(signature), asBuffer(message))
  } catch {
    return false
  }
}

/** The bytes in an ArrayBuffer of their own, as WebCrypto's types ask (a view may sit on a SharedArrayBuffer). */
function asBuffer(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return bytes.buffer instanceof ArrayBuffer ? (bytes as Uint8Array<ArrayBuffer>) : new Uint8Array(bytes)
}
