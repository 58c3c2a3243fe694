import { createPrivateKey, type KeyObject } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { leafHash } from '../src/node.ts'
import type { VectorFiles } from './vector-suite.ts'

export const VECTORS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'vectors')

export function readVector<T>(relativePath: string): T {
  return JSON.parse(readFileSync(path.join(VECTORS_DIR, relativePath), 'utf8')) as T
}

/** Every JSON file under a vectors directory, by path relative to it, in a stable order. */
export function readVectorDir<T>(relativeDir: string): [string, T][] {
  const root = path.join(VECTORS_DIR, relativeDir)
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => [file, JSON.parse(readFileSync(path.join(root, file), 'utf8')) as T])
}

/** Every vector file, as the suite takes them: JSON parsed, except RFC 8785 outputs (compared as text). */
export function readVectorFiles(): VectorFiles {
  const files: Record<string, unknown> = {}
  for (const file of readdirSync(VECTORS_DIR, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.json')) continue
    const text = readFileSync(path.join(VECTORS_DIR, file), 'utf8')
    const key = file.split(path.sep).join('/')
    files[key] = key.startsWith('jcs/output/') ? text : JSON.parse(text)
  }
  return files
}

/** Lenient decoding on purpose: the upstream vectors include empty and truncated hashes that must be refused. */
export const b64 = (text: string): Uint8Array => Buffer.from(text, 'base64')
export const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')
export const fromHex = (text: string): Uint8Array => Buffer.from(text, 'hex')

const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

/** An Ed25519 private key from its 32-byte RFC 8032 seed. */
export function ed25519FromSeed(seed: Uint8Array): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' })
}

/**
 * A golang.org/x/mod/sumdb/note signer key `PRIVATE+KEY+<name>+<hex key ID>+<base64(0x01 ‖ seed)>`, as the
 * Go tests publish them; only the tests need to read one.
 */
export function parseGoSignerKey(skey: string): { name: string; keyId: number; privateKey: KeyObject } {
  const [priv, key, name, id, ...encoded] = skey.split('+')
  const raw = Buffer.from(encoded.join('+'), 'base64')
  if (priv !== 'PRIVATE' || key !== 'KEY' || name === undefined || id === undefined || raw[0] !== 0x01) {
    throw new Error(`not a signer key: ${skey}`)
  }
  return { name, keyId: Number.parseInt(id, 16), privateKey: ed25519FromSeed(raw.subarray(1)) }
}

/** The leaves of transparency-dev/merkle's golden trees: leaf i is the two bytes i & 0xff, i >> 8. */
export function goldenLeafHashes(size: number): Uint8Array[] {
  return Array.from({ length: size }, (_, i) => leafHash(Uint8Array.of(i & 0xff, (i >> 8) & 0xff)))
}

/** The leaf hashes of transparency-dev/merkle's 8-leaf reference tree (testonly/constants.go). */
export function referenceLeafHashes(): Uint8Array[] {
  return readVector<{ leafInputs: string[] }>('merkle/constants.json').leafInputs.map((input) =>
    leafHash(fromHex(input)),
  )
}
