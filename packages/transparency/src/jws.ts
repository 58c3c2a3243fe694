import { compactVerify, errors, importJWK, type JWK } from 'jose'
import { decodeBase64Url } from './base64.ts'
import { decodeUtf8, toHex, utf8 } from './bytes.ts'
import { canonicalJson } from './canonical-json.ts'
import { platform } from './platform.ts'

/**
 * The only algorithms a manifest or checkpoint JWS may name: `Ed25519` (RFC 9864, what Arbiter signs with) and
 * the older `EdDSA` (RFC 8037) that verifiers written before RFC 9864 still emit and expect.
 */
export const JWS_ALGORITHMS: readonly ['Ed25519', 'EdDSA'] = ['Ed25519', 'EdDSA']

export type JwsAlgorithm = (typeof JWS_ALGORITHMS)[number]

/** A JSON Web Key Set (RFC 7517 §5), as served at `/.well-known/jwks.json`. */
export interface JsonWebKeySet {
  readonly keys: readonly JWK[]
}

/** Which check refused a JWS or a manifest envelope. */
export type JwsCheck = 'malformed' | 'alg' | 'kid' | 'key' | 'signature' | 'payload' | 'digest' | 'audit_seq'

/** A JWS or envelope that must not be trusted; `message` says which check failed and why, in one line. */
export class JwsError extends Error {
  override name = 'JwsError'
  constructor(
    readonly check: JwsCheck,
    message: string,
  ) {
    super(message)
  }
}

export interface VerifiedJws {
  kid: string
  alg: JwsAlgorithm
  /** The signed bytes, decoded as (strict) UTF-8. */
  payload: string
}

const BASE64URL = /^[A-Za-z0-9_-]*$/

/**
 * Verifies a compact JWS (RFC 7515) against a JWKS and returns its payload. The algorithm allow-list is enforced
 * on the protected header before any key is looked up or imported, so an attacker-chosen `alg` never decides how
 * the key bytes are used: `none`, and HS256 with the public key as the HMAC secret (the classic key-confusion
 * attack), are refused before jose sees the token.
 */
export async function verifyCompactJws(jws: unknown, jwks: JsonWebKeySet): Promise<VerifiedJws> {
  if (typeof jws !== 'string') throw new JwsError('malformed', 'jws is not a string')
  const parts = jws.split('.')
  if (parts.length !== 3 || !parts.every((part) => BASE64URL.test(part))) {
    throw new JwsError('malformed', 'jws is not a compact JWS (three base64url parts)')
  }
  const header = decodeHeader(parts[0]!)
  if (header === undefined) {
    throw new JwsError('malformed', 'JWS protected header is not a base64url JSON object')
  }

  const { alg, kid } = header
  if (!isAcceptedAlgorithm(alg)) {
    throw new JwsError(
      'alg',
      `JWS alg ${JSON.stringify(alg ?? null)} is not accepted (only Ed25519 or EdDSA)`,
    )
  }
  // An extension we do not implement could change what the signature covers (RFC 7797 `b64`): refuse them all.
  if ('crit' in header) {
    throw new JwsError('malformed', 'JWS header has a "crit" parameter; no extensions are accepted')
  }
  if (typeof kid !== 'string' || kid === '') throw new JwsError('kid', 'JWS header has no kid')

  const jwk = jwks.keys.find((candidate) => candidate.kid === kid)
  if (jwk === undefined) throw new JwsError('kid', `unknown kid ${JSON.stringify(kid)}: not in the JWKS`)
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') {
    throw new JwsError('key', `JWKS key ${JSON.stringify(kid)} is not an Ed25519 OKP key`)
  }

  let payloadBytes: Uint8Array
  try {
    // Only the public members are imported: a JWKS entry that also carries `d` (a leaked private key) must not
    // turn verification into something else.
    const publicKey = await importJWK({ kty: 'OKP', crv: 'Ed25519', x: jwk.x }, alg)
    const verified = await compactVerify(jws, publicKey, { algorithms: [...JWS_ALGORITHMS] })
    payloadBytes = verified.payload
  } catch (err) {
    if (err instanceof errors.JWSSignatureVerificationFailed) {
      throw new JwsError('signature', `signature does not verify with key ${JSON.stringify(kid)}`)
    }
    throw new JwsError('signature', `JWS rejected: ${err instanceof Error ? err.message : String(err)}`)
  }

  const payload = decodeUtf8(payloadBytes)
  if (payload === undefined) throw new JwsError('payload', 'JWS payload is not valid UTF-8')
  return { kid, alg, payload }
}

export interface VerifiedEnvelope {
  kid: string
  alg: JwsAlgorithm
  /** The signed manifest (the envelope's own object, now known to be exactly what was signed). */
  manifest: Record<string, unknown>
  /** `sha256:<hex>` of JCS(manifest). */
  manifestDigest: string
  /**
   * The manifest's position in the audit log, or null while it is not sequenced yet. Taken from the manifest
   * when it carries one (signed; manifests issued before the position moved out of the signature) or else from
   * the envelope, where it is not covered by the signature: an inclusion proof is what proves it.
   */
  auditSeq: number | null
}

/** The members an envelope may have. Anything else could be read as part of the signed result: refused. */
const ENVELOPE_FIELDS: readonly string[] = ['manifest', 'manifest_digest', 'jws', 'audit_seq']

/**
 * Checks a manifest envelope `{manifest, manifest_digest, jws, audit_seq?}`: the digest is `sha256(JCS(manifest))`,
 * the JWS verifies against the JWKS, and its payload is byte for byte `JCS(manifest)`. Envelopes of both layouts
 * verify: `audit_seq` inside the signed manifest (older manifests) or beside it in the envelope.
 */
export async function verifyManifestEnvelope(
  envelope: unknown,
  jwks: JsonWebKeySet,
): Promise<VerifiedEnvelope> {
  if (!isPlainObject(envelope)) throw new JwsError('malformed', 'envelope is not a JSON object')
  const unexpected = Object.keys(envelope).filter((field) => !ENVELOPE_FIELDS.includes(field))
  if (unexpected.length > 0) {
    throw new JwsError('malformed', `envelope has unexpected field(s): ${unexpected.join(', ')}`)
  }
  const { manifest, manifest_digest: manifestDigest, jws } = envelope
  if (!isPlainObject(manifest)) throw new JwsError('malformed', 'envelope.manifest is not a JSON object')
  if (typeof manifestDigest !== 'string') {
    throw new JwsError('malformed', 'envelope.manifest_digest is not a string')
  }
  if (typeof jws !== 'string') throw new JwsError('malformed', 'envelope.jws is not a string')
  const auditSeq = auditSeqOf(envelope, manifest)

  let canonicalManifest: string
  try {
    canonicalManifest = canonicalJson(manifest)
  } catch (err) {
    throw new JwsError('malformed', `manifest cannot be canonicalized: ${(err as Error).message}`)
  }
  const expectedDigest = sha256Digest(canonicalManifest)
  if (manifestDigest !== expectedDigest) {
    throw new JwsError(
      'digest',
      `manifest_digest ${manifestDigest} does not match sha256(JCS(manifest)) = ${expectedDigest}`,
    )
  }

  const verified = await verifyCompactJws(jws, jwks)
  if (verified.payload !== canonicalManifest) {
    throw new JwsError(
      'payload',
      sameJsonValue(verified.payload, canonicalManifest)
        ? 'JWS payload encodes the manifest but is not its canonical form (JCS)'
        : 'JWS payload does not match the manifest',
    )
  }
  return { kid: verified.kid, alg: verified.alg, manifest, manifestDigest, auditSeq }
}

function auditSeqOf(envelope: Record<string, unknown>, manifest: Record<string, unknown>): number | null {
  const outside = envelope.audit_seq
  if (outside !== undefined && outside !== null && !isSeq(outside)) {
    throw new JwsError('audit_seq', 'envelope.audit_seq is neither null nor a positive integer')
  }
  const inside = manifest.audit_seq
  if (inside === undefined || inside === null) return (outside as number | null | undefined) ?? null
  if (!isSeq(inside))
    throw new JwsError('audit_seq', 'manifest.audit_seq is neither null nor a positive integer')
  // Both present: the unsigned copy must not contradict the signed one.
  if (outside !== undefined && outside !== null && outside !== inside) {
    throw new JwsError(
      'audit_seq',
      `envelope.audit_seq ${outside} contradicts the signed manifest.audit_seq ${inside}`,
    )
  }
  return inside
}

/** `sha256:<64 lowercase hex>` of a text's UTF-8 bytes (or of raw bytes). */
export function sha256Digest(data: string | Uint8Array): `sha256:${string}` {
  return `sha256:${toHex(platform.sha256([typeof data === 'string' ? utf8(data) : data]))}`
}

function isAcceptedAlgorithm(alg: unknown): alg is JwsAlgorithm {
  return typeof alg === 'string' && (JWS_ALGORITHMS as readonly string[]).includes(alg)
}

function isSeq(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1
}

function decodeHeader(encoded: string): Record<string, unknown> | undefined {
  const bytes = decodeBase64Url(encoded)
  const text = bytes === undefined ? undefined : decodeUtf8(bytes)
  if (text === undefined) return undefined
  try {
    const parsed: unknown = JSON.parse(text)
    return isPlainObject(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}

/** True when `payload` parses to a value whose JCS is `canonical`; used only to word the refusal. */
function sameJsonValue(payload: string, canonical: string): boolean {
  try {
    return canonicalJson(JSON.parse(payload)) === canonical
  } catch {
    return false
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
