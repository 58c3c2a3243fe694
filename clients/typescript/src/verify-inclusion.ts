import { createPublicKey, type KeyObject } from 'node:crypto'
import {
  bytesEqual,
  CheckpointError,
  canonicalJson,
  decodeBase64,
  encodeBase64,
  leafHash,
  NoteError,
  type NoteVerifier,
  noteVerifier,
  openCheckpoint,
  ProofError,
  parseVerifierKey,
  verifyInclusion as verifyMerkleInclusion,
} from '@arbiter/transparency'
import { ArbiterVerificationError } from './errors.ts'

/**
 * The answer of `GET /v1/manifests/{id}/inclusion`: the manifest's `manifest.issued` audit record, its leaf index,
 * the tree size and leaf hash, the RFC 9162 audit path (base64 hashes), and the signed checkpoint it leads to.
 * TODO(openapi): replace with the generated response type once the route is in openapi/openapi.json; until then
 * it is read defensively (every member is checked before use).
 */
export interface ManifestInclusionProof {
  manifest_id: string
  record: Record<string, unknown>
  leaf_index: number
  tree_size: number
  leaf_hash: string
  proof: string[]
  checkpoint?: unknown
}

/** The log's public key: a KeyObject, an Ed25519 JWK (`/.well-known/jwks.json`), or a C2SP verifier key text. */
export type LogPublicKey = KeyObject | { kty: string; crv?: string; x?: string } | string

export interface VerifyInclusionOptions {
  /** The log's origin (its name in checkpoints) to insist on; by default the origin the signed note states. */
  origin?: string
  /** Also require the record to be the `manifest.issued` record of the envelope with this `manifest_digest`. */
  manifestDigest?: string
}

export interface VerifiedInclusion {
  manifestId: string
  /** The record's `seq`: leaf index + 1. */
  seq: number
  leafIndex: number
  treeSize: number
  /** The root the proof leads to, as the checkpoint states it (base64). */
  rootHash: string
  origin: string
  record: Record<string, unknown>
}

const utf8 = new TextEncoder()

/**
 * Checks that a manifest was logged, offline: the signed note is a checkpoint signed by the log's Ed25519 key (key
 * name = the checkpoint's origin); its tree size is the proof's; the leaf hash is the RFC 9162 leaf hash of the
 * UTF-8 bytes of JCS(record); the record is the manifest's `manifest.issued` record at that leaf; and the audit
 * path leads from the leaf to the checkpoint's root. Returns what it proved; throws ArbiterVerificationError
 * naming the failed check otherwise. The hashing, proof and note code is the service's own, from
 * @arbiter/transparency.
 */
export function verifyInclusion(
  proof: ManifestInclusionProof,
  note: string | Uint8Array,
  publicKey: LogPublicKey,
  options: VerifyInclusionOptions = {},
): VerifiedInclusion {
  const shape = readProof(proof)
  const noteText = typeof note === 'string' ? note : new TextDecoder().decode(note)
  const verifier = logVerifier(publicKey, options.origin ?? originOf(noteText))

  let checkpoint: ReturnType<typeof openCheckpoint>['checkpoint']
  try {
    checkpoint = openCheckpoint(note, verifier).checkpoint
  } catch (err) {
    if (err instanceof NoteError) fail('note', `the checkpoint note does not verify: ${err.message}`, err)
    if (err instanceof CheckpointError)
      fail('checkpoint', `the signed checkpoint is not valid: ${err.message}`, err)
    throw err
  }
  if (checkpoint.treeSize !== shape.treeSize) {
    fail(
      'tree_size',
      `the proof is for tree size ${shape.treeSize}, the checkpoint is of size ${checkpoint.treeSize}`,
    )
  }
  checkCheckpointObject(proof.checkpoint, checkpoint)

  const { record } = shape
  if (record.seq !== shape.leafIndex + 1) {
    fail('record', `the record's seq ${String(record.seq)} is not at leaf index ${shape.leafIndex} (seq − 1)`)
  }
  if (record.kind !== 'manifest.issued' || record.manifest_id !== shape.manifestId) {
    fail('record', `the record is not the manifest.issued record of manifest ${shape.manifestId}`)
  }
  if (options.manifestDigest !== undefined) {
    const digest = (record.data as Record<string, unknown> | null | undefined)?.manifest_digest
    if (digest !== options.manifestDigest) {
      fail('record', `the record logs manifest digest ${String(digest)}, not ${options.manifestDigest}`)
    }
  }

  let recordLeaf: Uint8Array
  try {
    recordLeaf = leafHash(utf8.encode(canonicalJson(record)))
  } catch (err) {
    fail('leaf_hash', 'the record cannot be canonicalized', err)
  }
  if (!bytesEqual(recordLeaf, shape.leafHash)) {
    fail('leaf_hash', `leaf_hash is not the RFC 9162 leaf hash of JCS(record) (${encodeBase64(recordLeaf)})`)
  }

  let included: boolean
  try {
    included = verifyMerkleInclusion(
      shape.leafIndex,
      shape.treeSize,
      recordLeaf,
      shape.proofHashes,
      checkpoint.rootHash,
    )
  } catch (err) {
    if (err instanceof ProofError) fail('proof', `the inclusion proof is malformed: ${err.message}`, err)
    throw err
  }
  if (!included) fail('proof', 'the inclusion proof does not lead to the checkpoint root')

  return {
    manifestId: shape.manifestId,
    seq: shape.leafIndex + 1,
    leafIndex: shape.leafIndex,
    treeSize: shape.treeSize,
    rootHash: encodeBase64(checkpoint.rootHash),
    origin: checkpoint.origin,
    record,
  }
}

interface ProofShape {
  manifestId: string
  record: Record<string, unknown>
  leafIndex: number
  treeSize: number
  leafHash: Uint8Array
  proofHashes: Uint8Array[]
}

function readProof(proof: unknown): ProofShape {
  if (!isObject(proof)) fail('malformed', 'the inclusion proof is not a JSON object')
  const { manifest_id: manifestId, record, leaf_index: leafIndex, tree_size: treeSize } = proof
  if (typeof manifestId !== 'string') fail('malformed', 'manifest_id is not a string')
  if (!isObject(record)) fail('malformed', 'record is not a JSON object')
  if (!isIndex(leafIndex)) fail('malformed', 'leaf_index is not an integer ≥ 0')
  if (!isIndex(treeSize) || treeSize < 1) fail('malformed', 'tree_size is not an integer ≥ 1')
  if (leafIndex >= treeSize)
    fail('malformed', `leaf_index ${leafIndex} is outside a tree of size ${treeSize}`)
  const leaf = typeof proof.leaf_hash === 'string' ? decodeBase64(proof.leaf_hash) : undefined
  if (leaf === undefined) fail('malformed', 'leaf_hash is not base64')
  if (!Array.isArray(proof.proof)) fail('malformed', 'proof is not an array of base64 hashes')
  const proofHashes = proof.proof.map((hash, i) => {
    const bytes = typeof hash === 'string' ? decodeBase64(hash) : undefined
    if (bytes === undefined) fail('malformed', `proof[${i}] is not base64`)
    return bytes
  })
  return { manifestId, record, leafIndex, treeSize, leafHash: leaf, proofHashes }
}

/**
 * The answer also carries the checkpoint as JSON (`{checkpoint: {origin, tree_size, root_hash, …}, note, jws}`);
 * where it states the tree head it must state the one the signed note does.
 */
function checkCheckpointObject(
  value: unknown,
  signed: { origin: string; treeSize: number; rootHash: Uint8Array },
): void {
  if (value === undefined || value === null) return
  const head = isObject(value) && isObject(value.checkpoint) ? value.checkpoint : value
  if (!isObject(head)) fail('checkpoint', 'checkpoint is neither null nor an object')
  const mismatch =
    (head.origin !== undefined && head.origin !== signed.origin) ||
    (head.tree_size !== undefined && head.tree_size !== signed.treeSize) ||
    (head.root_hash !== undefined && head.root_hash !== encodeBase64(signed.rootHash))
  if (mismatch) fail('checkpoint', 'the checkpoint in the answer does not match the signed note')
}

function logVerifier(publicKey: LogPublicKey, origin: string): NoteVerifier {
  try {
    if (typeof publicKey === 'string') {
      const parsed = parseVerifierKey(publicKey)
      if (parsed.name !== origin) {
        fail('note', `the verifier key is for ${JSON.stringify(parsed.name)}, not ${JSON.stringify(origin)}`)
      }
      return parsed
    }
    const key = isKeyObject(publicKey)
      ? publicKey
      : createPublicKey({ key: publicJwk(publicKey), format: 'jwk' })
    if (key.asymmetricKeyType !== 'ed25519') throw new TypeError(`it is a ${key.asymmetricKeyType} key`)
    return noteVerifier(origin, key)
  } catch (err) {
    if (err instanceof ArbiterVerificationError) throw err
    if (err instanceof NoteError)
      fail('note', `no log key can be named ${JSON.stringify(origin)}: ${err.message}`, err)
    fail('key', `the log public key is not an Ed25519 public key: ${(err as Error).message}`, err)
  }
}

/** Only the public members: an Ed25519 JWK that also carries `d` is used as the public key it contains. */
function publicJwk(jwk: { kty: string; crv?: string; x?: string }): { kty: string; crv: string; x: string } {
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') {
    throw new TypeError('the JWK is not an OKP Ed25519 key')
  }
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x }
}

function originOf(note: string): string {
  const end = note.indexOf('\n')
  return end === -1 ? note : note.slice(0, end)
}

function isKeyObject(value: unknown): value is KeyObject {
  return typeof value === 'object' && value !== null && 'asymmetricKeyType' in value && 'export' in value
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isIndex(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

function fail(check: ArbiterVerificationError['check'], message: string, cause?: unknown): never {
  throw new ArbiterVerificationError(check, message, cause === undefined ? undefined : { cause })
}
