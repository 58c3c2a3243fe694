import { createHash, createPublicKey, type KeyObject, sign, verify } from 'node:crypto'
import { decodeBase64, encodeBase64 } from './base64.ts'

/** A key that signs notes: its name (for a log, the origin) and its Ed25519 private key. */
export interface NoteSigner {
  readonly name: string
  readonly privateKey: KeyObject
}

/** A known Ed25519 key that notes may be signed with; `keyId` is the uint32 key ID. */
export interface NoteVerifier {
  readonly name: string
  readonly keyId: number
  readonly publicKey: KeyObject
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
  return name !== '' && isWellFormed(name) && !/[\p{White_Space}+]/u.test(name)
}

/** The key ID: the first 4 bytes, big-endian, of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ 32-byte public key). */
export function ed25519KeyId(name: string, publicKey: KeyObject): number {
  return keyIdOf(name, rawPublicKey(publicKey))
}

/** The verifier for a named Ed25519 public (or private) key. */
export function noteVerifier(name: string, publicKey: KeyObject): NoteVerifier {
  if (!isValidKeyName(name)) throw new NoteError('malformed', `invalid key name ${JSON.stringify(name)}`)
  const key = publicKey.type === 'private' ? createPublicKey(publicKey) : publicKey
  return { name, keyId: ed25519KeyId(name, key), publicKey: key }
}

/** The verifier key `<name>+<hex key ID>+<base64(0x01 ‖ public key)>` that verifiers are configured with. */
export function formatVerifierKey(verifier: NoteVerifier): string {
  const key = Buffer.concat([Uint8Array.of(ED25519), rawPublicKey(verifier.publicKey)])
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
  const raw = key.subarray(1)
  const keyId = Number.parseInt(hex, 16)
  if (keyId !== keyIdOf(name, raw)) throw new NoteError('malformed', 'verifier key ID does not match the key')
  const publicKey = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') },
    format: 'jwk',
  })
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
  if (signer.privateKey.asymmetricKeyType !== 'ed25519') {
    throw new NoteError('malformed', 'signing key is not Ed25519')
  }
  const keyId = Buffer.alloc(4)
  keyId.writeUInt32BE(ed25519KeyId(signer.name, signer.privateKey))
  const signature = sign(null, Buffer.from(text, 'utf8'), signer.privateKey)
  return `${text}\n${SIGNATURE_PREFIX}${signer.name} ${encodeBase64(Buffer.concat([keyId, signature]))}\n`
}

/**
 * Opens a signed note. Signatures from unknown keys are listed as unverified and otherwise ignored; a
 * signature from a known key that fails, a malformed note, or a note no known key verified is refused
 * with a NoteError. Repeated signatures by one key are counted once, as golang.org/x/mod/sumdb/note does.
 */
export function verifyNote(note: string | Uint8Array, verifiers: readonly NoteVerifier[]): VerifiedNote {
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
  const verified: NoteSignature[] = []
  const unverified: NoteSignature[] = []
  const seenKeys = new Set<string>()
  const seenUnknownLines = new Set<string>()
  const textBytes = Buffer.from(text, 'utf8')
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
    if (!verifySignature(textBytes, bytes, known[0]!.publicKey)) {
      throw new NoteError('invalid-signature', `invalid signature for ${keyLabel}`)
    }
    verified.push({ name, keyId, signature })
  }
  if (verified.length === 0) throw new NoteError('unverified', 'no known key signed the note')
  return { text, verified, unverified }
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
  const keyId = Buffer.from(decoded.buffer, decoded.byteOffset, 4).readUInt32BE()
  return { name, keyId, signature, bytes: decoded.subarray(4) }
}

function verifySignature(text: Uint8Array, signature: Uint8Array, publicKey: KeyObject): boolean {
  try {
    return verify(null, text, publicKey, signature)
  } catch {
    // A signature of the wrong length for the key is simply not a valid signature.
    return false
  }
}

function keyIdOf(name: string, rawKey: Uint8Array): number {
  const digest = createHash('sha256')
    .update(name, 'utf8')
    .update(Uint8Array.of(0x0a, ED25519))
    .update(rawKey)
    .digest()
  return digest.readUInt32BE(0)
}

function rawPublicKey(key: KeyObject): Uint8Array {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key
  if (publicKey.asymmetricKeyType !== 'ed25519') {
    throw new NoteError('malformed', 'the key is not an Ed25519 key')
  }
  const { x } = publicKey.export({ format: 'jwk' })
  return Buffer.from(x!, 'base64url')
}

function hexKeyId(keyId: number): string {
  return keyId.toString(16).padStart(8, '0')
}

/** Valid UTF-8 (no lone surrogates) and no ASCII control character but newline. */
function isNoteText(text: string): boolean {
  if (!isWellFormed(text)) return false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x20 && code !== 0x0a) return false
  }
  return true
}

function isWellFormed(text: string): boolean {
  return Buffer.from(text, 'utf8').toString('utf8') === text
}

/** Strict UTF-8: Buffer replaces invalid sequences with U+FFFD, so a lossy decode does not round-trip. */
function decodeUtf8(bytes: Uint8Array): string | undefined {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')
  return Buffer.from(text, 'utf8').equals(bytes) ? text : undefined
}
