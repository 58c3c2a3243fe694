import { decodeBase64, decodeBase64Url, encodeBase64 } from './base64.ts'
import { concatBytes, decodeUtf8, utf8 } from './bytes.ts'
import { type KeyObjectLike, platform, verifyEd25519 } from './platform.ts'

export type { KeyObjectLike } from './platform.ts'

/** An Ed25519 public key as a JWK (RFC 8037), as a JWKS lists it; members other than these are not read. */
export interface Ed25519Jwk {
  readonly kty?: string | undefined
  readonly crv?: string | undefined
  readonly x?: string | undefined
}

/** An Ed25519 key: its 32 raw public-key bytes, its JWK, or a node:crypto KeyObject (public or private). */
export type Ed25519Key = Uint8Array | Ed25519Jwk | KeyObjectLike

/** A key that signs notes: its name (for a log, the origin) and its Ed25519 private key (Node build only). */
export interface NoteSigner {
  readonly name: string
  readonly privateKey: KeyObjectLike
}

/** A known Ed25519 key that notes may be signed with; `keyId` is the uint32 key ID. */
export interface NoteVerifier {
  readonly name: string
  readonly keyId: number
  /** The 32 raw bytes of the Ed25519 public key. */
  readonly publicKey: Uint8Array
}

/** One signature line: key name, key ID and the base64 exactly as written. */
export interface NoteSignature {
  readonly name: string
  readonly keyId: number
  readonly signature: string
}

/** An opened note: its text, the signatures known keys verified, and those from keys nobody vouched for. */
export interface VerifiedNote {
  readonly text: string
  readonly verified: NoteSignature[]
  readonly unverified: NoteSignature[]
}

export type NoteErrorReason = 'malformed' | 'invalid-signature' | 'unverified' | 'ambiguous-key'

/** A note that must not be trusted, and why. */
export class NoteError extends Error {
  override name = 'NoteError'
  constructor(
    readonly reason: NoteErrorReason,
    message: string,
  ) {
    super(message)
  }
}

/** The signature type byte of Ed25519 in key IDs and verifier keys. */
const ED25519 = 0x01
const ED25519_PUBLIC_KEY_SIZE = 32
const SIGNATURE_PREFIX = '\u2014 '
/** More signatures than any note should carry: refused rather than verified one by one. */
const MAX_SIGNATURES = 100

/** Key names are non-empty, without Unicode spaces and without '+', which separates verifier-key fields. */
export function isValidKeyName(name: string): boolean {
  return name !== '' && name.isWellFormed() && !/[\p{White_Space}+]/u.test(name)
}

/** The key ID: the first 4 bytes, big-endian, of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ 32-byte public key). */
export function ed25519KeyId(name: string, key: Ed25519Key): number {
  return keyIdOf(name, rawPublicKey(key))
}

/** The verifier for a named Ed25519 public key (or the public half of a private KeyObject). */
export function noteVerifier(name: string, key: Ed25519Key): NoteVerifier {
  if (!isValidKeyName(name)) throw new NoteError('malformed', `invalid key name ${JSON.stringify(name)}`)
  const publicKey = rawPublicKey(key)
  return { name, keyId: keyIdOf(name, publicKey), publicKey }
}

/** The verifier key `<name>+<hex key ID>+<base64(0x01 ‖ public key)>` that verifiers are configured with. */
export function formatVerifierKey(verifier: NoteVerifier): string {
  const key = concatBytes([Uint8Array.of(ED25519), rawPublicKey(verifier.publicKey)])
  return `${verifier.name}+${hexKeyId(verifier.keyId)}+${encodeBase64(key)}`
}

/** Parses a verifier key, refusing any whose key ID does not match its name and key. */
export function parseVerifierKey(vkey: string): NoteVerifier {
  const [name = '', hex = '', encoded = '', ...rest] = vkey.split('+')
  // '+' belongs to the base64 alphabet: only the first two separate fields.
  const key = decodeBase64([encoded, ...rest].join('+'))
  if (!isValidKeyName(name) || !/^[0-9a-f]{8}$/.test(hex) || key === undefined) {
    throw new NoteError('malformed', 'malformed verifier key')
  }
  if (key[0] !== ED25519 || key.length !== 1 + ED25519_PUBLIC_KEY_SIZE) {
    throw new NoteError('malformed', 'verifier key is not an Ed25519 key')
  }
  const publicKey = key.slice(1)
  const keyId = Number.parseInt(hex, 16)
  if (keyId !== keyIdOf(name, publicKey)) {
    throw new NoteError('malformed', 'verifier key ID does not match the key')
  }
  return { name, keyId, publicKey }
}

/** Signs `text` (which ends in a newline) as a signed note: the text, a blank line, one signature line. */
export function signNote(text: string, signer: NoteSigner): string {
  if (!text.endsWith('\n') || !isNoteText(text)) {
    throw new NoteError('malformed', 'note text must be printable UTF-8 ending in a newline')
  }
  if (!isValidKeyName(signer.name)) {
    throw new NoteError('malformed', `invalid key name ${JSON.stringify(signer.name)}`)
  }
  if (signer.privateKey.type !== 'private' || signer.privateKey.asymmetricKeyType !== 'ed25519') {
    throw new NoteError('malformed', 'signing key is not an Ed25519 private key')
  }
  const sign = platform.signEd25519
  if (sign === undefined) throw new Error('signing notes needs node:crypto (the Node build)')
  const keyId = new Uint8Array(4)
  new DataView(keyId.buffer).setUint32(0, ed25519KeyId(signer.name, signer.privateKey))
  const signature = sign(signer.privateKey, utf8(text))
  return `${text}\n${SIGNATURE_PREFIX}${signer.name} ${encodeBase64(concatBytes([keyId, signature]))}\n`
}

/**
 * Opens a signed note. Signatures from unknown keys are listed as unverified and otherwise ignored; a
 * signature from a known key that fails, a malformed note, or a note no known key verified is refused
 * with a NoteError. Repeated signatures by one key are counted once, as golang.org/x/mod/sumdb/note does.
 * Synchronous, so the Node build only (node:crypto); `verifyNoteAsync` runs anywhere.
 */
export function verifyNote(note: string | Uint8Array, verifiers: readonly NoteVerifier[]): VerifiedNote {
  const verify = platform.verifyEd25519Sync
  if (verify === undefined) {
    throw new Error('synchronous Ed25519 verification needs node:crypto: use verifyNoteAsync')
  }
  const opened = openNote(note, verifiers)
  for (const check of opened.checks) {
    if (!verify(check.publicKey, opened.textBytes, check.signature)) throw invalidSignature(check)
  }
  return verifiedNote(opened)
}

/** `verifyNote` with Ed25519 through WebCrypto: the same checks and refusals, in a browser as in Node. */
export async function verifyNoteAsync(
  note: string | Uint8Array,
  verifiers: readonly NoteVerifier[],
): Promise<VerifiedNote> {
  const opened = openNote(note, verifiers)
  for (const check of opened.checks) {
    if (!(await verifyEd25519(check.publicKey, opened.textBytes, check.signature))) {
      throw invalidSignature(check)
    }
  }
  return verifiedNote(opened)
}

/** A signature by a known key, still to be checked. */
interface SignatureCheck {
  keyLabel: string
  publicKey: Uint8Array
  signature: Uint8Array
}

/** A note taken apart: its text, which signatures to check, and the lines by known and unknown keys. */
interface OpenedNote {
  text: string
  textBytes: Uint8Array
  checks: SignatureCheck[]
  /** The lines by known keys: verified once every check has passed. */
  verified: NoteSignature[]
  unverified: NoteSignature[]
}

function openNote(note: string | Uint8Array, verifiers: readonly NoteVerifier[]): OpenedNote {
  const message = typeof note === 'string' ? note : decodeUtf8(note)
  if (message === undefined || !isNoteText(message)) {
    throw new NoteError('malformed', 'a note must be UTF-8 without control characters other than newline')
  }
  // The text runs to the last blank line, keeping its final newline; signature lines follow.
  const split = message.lastIndexOf('\n\n')
  if (split < 0) throw new NoteError('malformed', 'the note has no signatures')
  const text = message.slice(0, split + 1)
  const block = message.slice(split + 2)
  if (block === '' || !block.endsWith('\n')) throw new NoteError('malformed', 'the note has no signatures')

  const lines = block.slice(0, -1).split('\n')
  if (lines.length > MAX_SIGNATURES) throw new NoteError('malformed', 'the note has too many signatures')
  const checks: SignatureCheck[] = []
  const verified: NoteSignature[] = []
  const unverified: NoteSignature[] = []
  const seenKeys = new Set<string>()
  const seenUnknownLines = new Set<string>()
  for (const line of lines) {
    const { name, keyId, signature, bytes } = parseSignatureLine(line)
    const known = verifiers.filter((v) => v.name === name && v.keyId === keyId)
    if (known.length === 0) {
      if (!seenUnknownLines.has(line)) unverified.push({ name, keyId, signature })
      seenUnknownLines.add(line)
      continue
    }
    const keyLabel = `${name}+${hexKeyId(keyId)}`
    if (known.length > 1) throw new NoteError('ambiguous-key', `more than one verifier for ${keyLabel}`)
    if (seenKeys.has(keyLabel)) continue
    seenKeys.add(keyLabel)
    checks.push({ keyLabel, publicKey: known[0]!.publicKey, signature: bytes })
    verified.push({ name, keyId, signature })
  }
  return { text, textBytes: utf8(text), checks, verified, unverified }
}

function verifiedNote({ text, verified, unverified }: OpenedNote): VerifiedNote {
  if (verified.length === 0) throw new NoteError('unverified', 'no known key signed the note')
  return { text, verified, unverified }
}

function invalidSignature(check: SignatureCheck): NoteError {
  return new NoteError('invalid-signature', `invalid signature for ${check.keyLabel}`)
}

function parseSignatureLine(line: string): NoteSignature & { bytes: Uint8Array } {
  const malformed = new NoteError('malformed', 'malformed signature line')
  if (!line.startsWith(SIGNATURE_PREFIX)) throw malformed
  const rest = line.slice(SIGNATURE_PREFIX.length)
  const space = rest.indexOf(' ')
  const name = space < 0 ? rest : rest.slice(0, space)
  const signature = space < 0 ? '' : rest.slice(space + 1)
  const decoded = decodeBase64(signature)
  // Four bytes of key ID, then at least one byte of signature.
  if (!isValidKeyName(name) || decoded === undefined || decoded.length < 5) throw malformed
  const keyId = new DataView(decoded.buffer, decoded.byteOffset, 4).getUint32(0)
  return { name, keyId, signature, bytes: decoded.subarray(4) }
}

function keyIdOf(name: string, rawKey: Uint8Array): number {
  const digest = platform.sha256([utf8(name), Uint8Array.of(0x0a, ED25519), rawKey])
  return new DataView(digest.buffer, digest.byteOffset, 4).getUint32(0)
}

/** The raw public key of an Ed25519 key given as bytes, as a JWK or as a (public or private) KeyObject. */
function rawPublicKey(key: Ed25519Key): Uint8Array {
  let raw: Uint8Array | undefined
  if (key instanceof Uint8Array) {
    raw = key
  } else if (isKeyObject(key)) {
    // The JWK of a private key carries its public half as `x` too.
    if (key.asymmetricKeyType === 'ed25519') raw = decodeBase64Url(key.export({ format: 'jwk' }).x ?? '')
  } else if (key.kty === 'OKP' && key.crv === 'Ed25519') {
    raw = decodeBase64Url(key.x ?? '')
  }
  if (raw?.length !== ED25519_PUBLIC_KEY_SIZE) {
    throw new NoteError('malformed', 'not an Ed25519 public key (32 raw bytes, a JWK or a KeyObject)')
  }
  return raw
}

function isKeyObject(key: Ed25519Jwk | KeyObjectLike): key is KeyObjectLike {
  return typeof (key as Partial<KeyObjectLike>).export === 'function'
}

function hexKeyId(keyId: number): string {
  return keyId.toString(16).padStart(8, '0')
}

/** Valid UTF-8 (no lone surrogates) and no ASCII control character but newline. */
function isNoteText(text: string): boolean {
  if (!text.isWellFormed()) return false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x20 && code !== 0x0a) return false
  }
  return true
}
