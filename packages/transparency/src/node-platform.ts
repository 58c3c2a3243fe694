import { createPublicKey, hash, type KeyObject, sign, verify } from 'node:crypto'
import { type Platform, usePlatform } from './platform.ts'

/** Public keys already imported, by the raw bytes a verifier holds (verifiers are reused across notes). */
const keyObjects = new WeakMap<Uint8Array, KeyObject>()

function publicKeyObject(raw: Uint8Array): KeyObject {
  let key = keyObjects.get(raw)
  if (key === undefined) {
    key = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') },
      format: 'jwk',
    })
    keyObjects.set(raw, key)
  }
  return key
}

/**
 * node:crypto's primitives. SHA-256 is one native call whose digest comes back as a latin1 string copied into a
 * pooled Buffer: cheaper than a Hash object or a digest Buffer of its own, which matters where a log's whole tree
 * is hashed (verifying a million records hashes about two million leaves and nodes).
 */
export const nodePlatform: Platform = {
  sha256(parts) {
    const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts)
    return Buffer.from(hash('sha256', bytes, 'binary'), 'latin1')
  },
  encodeBase64(bytes) {
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')
  },
  decodeBase64(text) {
    return Buffer.from(text, 'base64')
  },
  verifyEd25519Sync(publicKey, message, signature) {
    try {
      return verify(null, message, publicKeyObject(publicKey), signature)
    } catch {
      // A signature of the wrong length for the key is simply not a valid signature.
      return false
    }
  },
  signEd25519(privateKey, message) {
    return sign(null, message, privateKey as KeyObject)
  },
}

usePlatform(nodePlatform)
