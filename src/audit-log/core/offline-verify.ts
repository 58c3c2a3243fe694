import { createPublicKey, type KeyObject } from 'node:crypto'
import { type Jwks, verifyCompactAgainstJwks, verifyEnvelope } from '../../crypto/jws.ts'
import { canonicalJson, sha256 } from '../../domain/shared/canonical-json.ts'
import {
  bytesEqual,
  decodeBase64,
  encodeBase64,
  leafHash,
  noteVerifier,
  openCheckpoint,
  verifyConsistency,
  verifyInclusion,
} from './transparency.ts'

/**
 * Offline checks of what the log's API hands out, against a JWKS alone: signed checkpoints (the JSON or the
 * note), inclusion proofs (of a record, or of a manifest's record) and consistency proofs between two saved
 * checkpoints. Each check says what failed; nothing here trusts a field it has not checked.
 */

export type Outcome = { ok: true; message: string } | { ok: false; reason: string }

/** A checkpoint whose signatures verified: what proofs are checked against. */
export interface TrustedCheckpoint {
  origin: string
  treeSize: number
  rootHash: Uint8Array
  /** The JWKS kid whose key signed the note. */
  kid: string
}

type Trusted = { ok: true; checkpoint: TrustedCheckpoint } | { ok: false; reason: string }

const CHECKPOINT_FIELDS = ['at', 'head_hash', 'head_seq', 'origin', 'root_hash', 'tree_size']
const SIGNED_CHECKPOINT_FIELDS = ['checkpoint', 'jws', 'note']
const INCLUSION_FIELDS = ['checkpoint', 'leaf_hash', 'leaf_index', 'proof', 'seq', 'tree_size']
const MANIFEST_INCLUSION_FIELDS = [
  'checkpoint',
  'leaf_hash',
  'leaf_index',
  'manifest_id',
  'proof',
  'record',
  'tree_size',
]
const CONSISTENCY_FIELDS = ['from_size', 'proof', 'to_size']
const RECORD_FIELDS = [
  'actor',
  'at',
  'data',
  'hash',
  'kind',
  'manifest_id',
  'orchestrator_id',
  'outcome_id',
  'prev_hash',
  'seq',
  'subagent_id',
  'verdict',
]

export type DocumentKind =
  | 'envelope'
  | 'checkpoint'
  | 'note'
  | 'inclusion'
  | 'manifest-inclusion'
  | 'consistency'
  | 'not-json'
  | 'unknown'

/** What a saved file is, by its shape: JSON answers of the API, or a note's text. */
export function documentKind(text: string): { kind: DocumentKind; value: unknown } {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { kind: /\n\n\u2014 /.test(text) ? 'note' : 'not-json', value: text }
  }
  if (!isObject(value)) return { kind: 'unknown', value }
  if ('manifest' in value) return { kind: 'envelope', value }
  if ('manifest_id' in value && 'record' in value) return { kind: 'manifest-inclusion', value }
  if ('leaf_hash' in value) return { kind: 'inclusion', value }
  if ('from_size' in value) return { kind: 'consistency', value }
  if ('checkpoint' in value || 'note' in value) return { kind: 'checkpoint', value }
  return { kind: 'unknown', value }
}

/** A signed checkpoint `{checkpoint, note, jws}`: both signatures, and the note and the JSON agree. */
export async function verifySignedCheckpoint(value: unknown, jwks: Jwks): Promise<Trusted> {
  const shape = exactFields(value, SIGNED_CHECKPOINT_FIELDS, 'signed checkpoint')
  if (shape) return fail(shape)
  const { checkpoint, note, jws } = value as Record<string, unknown>
  const inner = exactFields(checkpoint, CHECKPOINT_FIELDS, 'checkpoint')
  if (inner) return fail(inner)
  const c = checkpoint as Record<string, unknown>
  if (typeof note !== 'string') return fail('note is not a string')
  if (typeof jws !== 'string') return fail('jws is not a string')
  if (c.head_seq !== c.tree_size) return fail('checkpoint head_seq is not its tree_size')
  const jwsResult = await verifyCompactAgainstJwks(jws, jwks)
  if (!jwsResult.ok) return fail(`checkpoint JWS: ${jwsResult.reason}`)
  let canonical: string
  try {
    canonical = canonicalJson(checkpoint)
  } catch {
    return fail('checkpoint cannot be canonicalized')
  }
  if (jwsResult.payload !== canonical) return fail('checkpoint JWS payload does not match the checkpoint')
  const opened = verifyCheckpointNote(note, jwks)
  if (!opened.ok) return opened
  const trusted = opened.checkpoint
  if (trusted.origin !== c.origin || trusted.treeSize !== c.tree_size) {
    return fail('the note and the checkpoint JSON name different origins or tree sizes')
  }
  if (encodeBase64(trusted.rootHash) !== c.root_hash) {
    return fail('the note and the checkpoint JSON name different root hashes')
  }
  return { ok: true, checkpoint: trusted }
}

/** A checkpoint note: signed by a JWKS key under the name the note's own origin line gives. */
export function verifyCheckpointNote(note: string, jwks: Jwks): Trusted {
  const origin = note.slice(0, note.indexOf('\n'))
  if (origin === '' || !note.includes('\n')) return fail('the note has no origin line')
  const keys = ed25519Keys(jwks)
  if (keys.length === 0) return fail('the JWKS has no Ed25519 key')
  let reason = `no key in the JWKS signed the note as ${JSON.stringify(origin)}`
  for (const { kid, key } of keys) {
    try {
      const { checkpoint } = openCheckpoint(note, noteVerifier(origin, key))
      return {
        ok: true,
        checkpoint: { origin, treeSize: checkpoint.treeSize, rootHash: checkpoint.rootHash, kid },
      }
    } catch (err) {
      // Another key may have signed it (rotation); a bad signature by a known key is worth naming.
      if (
        (err as { reason?: string }).reason === 'invalid-signature' ||
        (err as Error).name === 'CheckpointError'
      ) {
        reason = (err as Error).message
      }
    }
  }
  return fail(reason)
}

/** A saved checkpoint file: the signed JSON, or the note alone. */
export async function verifyCheckpointFile(text: string, jwks: Jwks): Promise<Trusted> {
  const { kind, value } = documentKind(text)
  if (kind === 'note') return verifyCheckpointNote(text, jwks)
  if (kind === 'checkpoint') return verifySignedCheckpoint(value, jwks)
  return fail('not a signed checkpoint (neither the JSON nor the note)')
}

export function describeCheckpoint(c: TrustedCheckpoint): string {
  return `checkpoint of ${c.origin} at tree size ${c.treeSize} (root ${encodeBase64(c.rootHash)}) signed by ${c.kid}`
}

/**
 * An inclusion proof, of a record (`/v1/audit/proofs/inclusion`) or of a manifest's record
 * (`/v1/manifests/{id}/inclusion`), against its own signed checkpoint or `external` (one saved separately).
 */
export async function verifyInclusionDocument(
  value: unknown,
  jwks: Jwks,
  options: { external?: TrustedCheckpoint; envelope?: unknown } = {},
): Promise<Outcome> {
  const isManifest = isObject(value) && 'manifest_id' in value
  const shape = exactFields(
    value,
    isManifest ? MANIFEST_INCLUSION_FIELDS : INCLUSION_FIELDS,
    'inclusion proof',
  )
  if (shape) return fail(shape)
  const doc = value as Record<string, unknown>
  const { leaf_index: leafIndex, tree_size: treeSize } = doc
  if (!isCount(leafIndex) || !isCount(treeSize)) return fail('leaf_index and tree_size must be integers')
  const leaf = decodeHash(doc.leaf_hash)
  if (!leaf) return fail('leaf_hash is not the base64 of 32 bytes')
  if (!Array.isArray(doc.proof)) return fail('proof is not an array')
  const proof = doc.proof.map(decodeHash)
  if (proof.some((p) => p === undefined)) return fail('a proof hash is not the base64 of 32 bytes')

  let subject: string
  if (isManifest) {
    const recordCheck = checkManifestRecord(doc, leaf)
    if (!recordCheck.ok) return recordCheck
    subject = recordCheck.message
    if (options.envelope !== undefined) {
      const linked = await checkEnvelopeLink(options.envelope, doc, jwks)
      if (!linked.ok) return linked
    }
  } else {
    if (doc.seq !== leafIndex + 1) return fail('leaf_index is not seq − 1')
    subject = `record ${leafIndex + 1}`
  }

  let checkpoint: TrustedCheckpoint | undefined
  if (doc.checkpoint !== null) {
    const own = await verifySignedCheckpoint(doc.checkpoint, jwks)
    if (!own.ok) return own
    checkpoint = own.checkpoint
  }
  if (options.external) {
    if (checkpoint && !sameTree(checkpoint, options.external)) {
      return fail('the proof names another checkpoint than the one given')
    }
    checkpoint = options.external
  }
  if (!checkpoint) return fail('the proof has no signed checkpoint; give one with --checkpoint')
  if (checkpoint.treeSize !== treeSize) {
    return fail(`the proof is for tree size ${treeSize}, the checkpoint for ${checkpoint.treeSize}`)
  }
  if (!verifyInclusion(leafIndex, treeSize, leaf, proof as Uint8Array[], checkpoint.rootHash)) {
    return fail(`the proof does not lead from the leaf to the checkpoint's root`)
  }
  return { ok: true, message: `${subject} is in the tree of size ${treeSize} of ${checkpoint.origin}` }
}

/** A consistency proof between two saved checkpoints: the later tree extends the earlier one. */
export function verifyConsistencyDocument(
  value: unknown,
  from: TrustedCheckpoint,
  to: TrustedCheckpoint,
): Outcome {
  const shape = exactFields(value, CONSISTENCY_FIELDS, 'consistency proof')
  if (shape) return fail(shape)
  const doc = value as Record<string, unknown>
  if (!Array.isArray(doc.proof)) return fail('proof is not an array')
  const proof = doc.proof.map(decodeHash)
  if (proof.some((p) => p === undefined)) return fail('a proof hash is not the base64 of 32 bytes')
  if (from.origin !== to.origin) return fail('the two checkpoints are of different logs')
  if (doc.from_size !== from.treeSize || doc.to_size !== to.treeSize) {
    return fail(
      `the proof is from size ${doc.from_size} to ${doc.to_size}; the checkpoints are at ${from.treeSize} and ${to.treeSize}`,
    )
  }
  if (!verifyConsistency(from.treeSize, to.treeSize, proof as Uint8Array[], from.rootHash, to.rootHash)) {
    return fail(`the tree of size ${to.treeSize} does not extend the tree of size ${from.treeSize}`)
  }
  return {
    ok: true,
    message: `the tree of size ${to.treeSize} of ${to.origin} extends the tree of size ${from.treeSize}`,
  }
}

/** The record of a manifest inclusion: a manifest.issued record of that manifest, whose hash and leaf recompute. */
function checkManifestRecord(doc: Record<string, unknown>, leaf: Uint8Array): Outcome {
  const shape = exactFields(doc.record, RECORD_FIELDS, 'record')
  if (shape) return fail(shape)
  const record = doc.record as Record<string, unknown>
  if (record.kind !== 'manifest.issued' || record.manifest_id !== doc.manifest_id) {
    return fail(`the record is not the manifest.issued record of manifest ${String(doc.manifest_id)}`)
  }
  if (typeof record.seq !== 'number' || doc.leaf_index !== record.seq - 1) {
    return fail("leaf_index is not the record's seq − 1")
  }
  const { hash, ...unhashed } = record
  try {
    if (typeof record.prev_hash !== 'string' || sha256(record.prev_hash + canonicalJson(unhashed)) !== hash) {
      return fail("the record's hash does not recompute")
    }
    if (!bytesEqual(leafHash(new TextEncoder().encode(canonicalJson(record))), leaf)) {
      return fail('leaf_hash is not the hash of the record')
    }
  } catch {
    return fail('the record cannot be canonicalized')
  }
  return { ok: true, message: `manifest ${String(doc.manifest_id)} (record ${record.seq})` }
}

/** With the manifest's envelope at hand: it verifies, and the logged record names exactly its digest. */
async function checkEnvelopeLink(
  envelope: unknown,
  doc: Record<string, unknown>,
  jwks: Jwks,
): Promise<Outcome> {
  const verified = await verifyEnvelope(envelope, jwks)
  if (!verified.ok) return fail(`manifest envelope: ${verified.reason}`)
  const e = envelope as { manifest: { manifest_id?: unknown }; manifest_digest: string }
  const record = doc.record as { data?: { manifest_digest?: unknown } }
  if (e.manifest.manifest_id !== doc.manifest_id || record.data?.manifest_digest !== e.manifest_digest) {
    return fail('the logged record is not of this manifest (id or digest differs)')
  }
  return { ok: true, message: '' }
}

function ed25519Keys(jwks: Jwks): { kid: string; key: KeyObject }[] {
  const keys: { kid: string; key: KeyObject }[] = []
  for (const jwk of jwks.keys) {
    if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') continue
    try {
      keys.push({
        kid: String(jwk.kid ?? ''),
        key: createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' }),
      })
    } catch {
      // Not a usable key: skip it, as a verifier would.
    }
  }
  return keys
}

function sameTree(a: TrustedCheckpoint, b: TrustedCheckpoint): boolean {
  return a.origin === b.origin && a.treeSize === b.treeSize && bytesEqual(a.rootHash, b.rootHash)
}

function decodeHash(value: unknown): Uint8Array | undefined {
  const bytes = typeof value === 'string' ? decodeBase64(value) : undefined
  return bytes?.length === 32 ? bytes : undefined
}

function exactFields(value: unknown, fields: readonly string[], what: string): string | null {
  if (!isObject(value)) return `${what} is not a JSON object`
  const keys = Object.keys(value)
  const unexpected = keys.filter((key) => !fields.includes(key))
  if (unexpected.length > 0) return `${what} has unexpected field(s): ${unexpected.join(', ')}`
  const missing = fields.filter((field) => !keys.includes(field))
  if (missing.length > 0) return `${what} lacks field(s): ${missing.join(', ')}`
  return null
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function fail(reason: string): { ok: false; reason: string } {
  return { ok: false, reason }
}
