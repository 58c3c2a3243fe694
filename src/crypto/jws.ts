import { CompactSign, compactVerify, errors, importJWK, type JWK } from 'jose'
import { canonicalJson, sha256 } from '../domain/canonical-json.ts'
import type { SigningKey } from './signing-key.ts'

/** A JSON Web Key Set (RFC 7517 §5), as served at `/.well-known/jwks.json`. */
export interface Jwks {
  keys: JWK[]
}

export type VerifyResult = { ok: true; kid: string } | { ok: false; reason: string }

/**
 * The only algorithms a manifest or checkpoint JWS may name: `Ed25519` (RFC 9864, what Arbiter
 * signs with) and the older `EdDSA` (RFC 8037) that SPEC "Manifests" lets verifiers accept.
 */
const ACCEPTED_ALGS: readonly string[] = ['Ed25519', 'EdDSA']

const BASE64URL = /^[A-Za-z0-9_-]*$/

const utf8 = new TextEncoder()
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Compact JWS (RFC 7515) over `JCS(value)`: protected header exactly `{alg: 'Ed25519', kid}`
 * (SPEC "Manifests"). jose ≥ 6 implements the fully specified `Ed25519` alg of RFC 9864.
 */
export async function signCanonical(value: unknown, key: SigningKey): Promise<string> {
  return new CompactSign(utf8.encode(canonicalJson(value)))
    .setProtectedHeader({ alg: 'Ed25519', kid: key.kid })
    .sign(key.privateKey)
}

/**
 * Verifies a compact JWS against a JWKS and returns its payload as text. Used for manifest
 * envelopes and audit checkpoints (`{checkpoint, jws}`); callers compare the payload with
 * the JCS of the value it claims to sign.
 */
export async function verifyCompactAgainstJwks(
  jws: string,
  jwks: Jwks,
): Promise<VerifyResult & { payload?: string }> {
  if (typeof jws !== 'string') return fail('jws is not a string')
  const parts = jws.split('.')
  if (parts.length !== 3 || !parts.every((part) => BASE64URL.test(part))) {
    return fail('jws is not a compact JWS (three base64url parts)')
  }
  const header = decodeHeader(parts[0]!)
  if (header === undefined) return fail('JWS protected header is not a base64url JSON object')

  // The alg allow-list is enforced here, before any key is looked up or imported, so an
  // attacker-chosen alg never decides how the key bytes are used: `none`, and HS256 with the
  // public key as the HMAC secret (the classic key-confusion attack), stop at this line.
  const { alg, kid } = header
  if (typeof alg !== 'string' || !ACCEPTED_ALGS.includes(alg)) {
    return fail(`JWS alg ${JSON.stringify(alg ?? null)} is not accepted (only Ed25519 or EdDSA)`)
  }
  if ('crit' in header) return fail('JWS header has a "crit" parameter; no extensions are accepted')
  if (typeof kid !== 'string' || kid === '') return fail('JWS header has no kid')

  const jwk = jwks.keys.find((candidate) => candidate.kid === kid)
  if (jwk === undefined) return fail(`unknown kid ${JSON.stringify(kid)}: not in the JWKS`)
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') {
    return fail(`JWKS key ${JSON.stringify(kid)} is not an Ed25519 OKP key`)
  }

  let payloadBytes: Uint8Array
  try {
    // Only the public members are imported: a JWKS entry that also carries `d` (a leaked
    // private key) must not turn verification into something else.
    const publicKey = await importJWK({ kty: 'OKP', crv: 'Ed25519', x: jwk.x }, alg)
    const verified = await compactVerify(jws, publicKey, { algorithms: [...ACCEPTED_ALGS] })
    payloadBytes = verified.payload
  } catch (err) {
    if (err instanceof errors.JWSSignatureVerificationFailed) {
      return fail(`signature does not verify with key ${JSON.stringify(kid)}`)
    }
    return fail(`JWS rejected: ${err instanceof Error ? err.message : String(err)}`)
  }

  let payload: string
  try {
    payload = strictUtf8.decode(payloadBytes)
  } catch {
    return fail('JWS payload is not valid UTF-8')
  }
  return { ok: true, kid, payload }
}

/**
 * Checks a manifest envelope `{manifest, manifest_digest, jws, audit_seq}`: the digest
 * is `sha256(JCS(manifest))`, the JWS verifies against the JWKS, and its payload is exactly
 * `JCS(manifest)`. Each failure says which check failed.
 */
export async function verifyEnvelope(envelope: unknown, jwks: Jwks): Promise<VerifyResult> {
  if (!isPlainObject(envelope)) return fail('envelope is not a JSON object')
  const unexpected = Object.keys(envelope).filter((field) => !ENVELOPE_FIELDS.includes(field))
  if (unexpected.length > 0) {
    // Fields outside the signature could be read as part of the signed result; refuse them.
    return fail(`envelope has unexpected field(s): ${unexpected.join(', ')}`)
  }
  const { manifest, manifest_digest: manifestDigest, jws } = envelope
  if (!isPlainObject(manifest)) return fail('envelope.manifest is not a JSON object')
  if (typeof manifestDigest !== 'string') return fail('envelope.manifest_digest is not a string')
  if (typeof jws !== 'string') return fail('envelope.jws is not a string')
  // audit_seq sits outside the signature: it is only checked for shape, and against the signed one where an
  // older manifest carries its seq inside.
  const auditSeq = envelope.audit_seq
  if (
    auditSeq !== undefined &&
    auditSeq !== null &&
    !(Number.isSafeInteger(auditSeq) && (auditSeq as number) >= 1)
  ) {
    return fail('envelope.audit_seq is neither null nor a seq')
  }
  if (
    typeof manifest.audit_seq === 'number' &&
    typeof auditSeq === 'number' &&
    manifest.audit_seq !== auditSeq
  ) {
    return fail('envelope.audit_seq differs from the audit_seq signed inside the manifest')
  }

  let canonicalManifest: string
  try {
    canonicalManifest = canonicalJson(manifest)
  } catch (err) {
    return fail(`manifest cannot be canonicalized: ${err instanceof Error ? err.message : String(err)}`)
  }
  const expectedDigest = sha256(canonicalManifest) // = hashJson(manifest), without a second JCS pass
  if (manifestDigest !== expectedDigest) {
    return fail(`manifest_digest ${manifestDigest} does not match sha256(JCS(manifest)) = ${expectedDigest}`)
  }

  const verified = await verifyCompactAgainstJwks(jws, jwks)
  if (!verified.ok) return { ok: false, reason: verified.reason }

  if (verified.payload !== canonicalManifest) {
    return fail(
      sameJsonValue(verified.payload!, canonicalManifest)
        ? 'JWS payload encodes the manifest but is not its canonical form (JCS)'
        : 'JWS payload does not match the manifest',
    )
  }
  return { ok: true, kid: verified.kid }
}

const ENVELOPE_FIELDS: readonly string[] = ['manifest', 'manifest_digest', 'jws', 'audit_seq']

function decodeHeader(encoded: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(strictUtf8.decode(Buffer.from(encoded, 'base64url')))
    return isPlainObject(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}

/** True when `payload` parses to a value whose JCS is `canonical` — used only to word the reason. */
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

function fail(reason: string): { ok: false; reason: string } {
  return { ok: false, reason }
}
