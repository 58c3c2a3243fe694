import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import * as jose from 'jose'
import { buildJwks } from '../../src/crypto/jwks.ts'
import {
  type Jwks,
  signCanonical,
  signCanonicalText,
  THREAD_POOL_SIGNING_BYTES,
  verifyCompactAgainstJwks,
  verifyEnvelope,
} from '../../src/crypto/jws.ts'
import {
  loadSigningKey,
  rotateDataDirSigningKey,
  type SigningKey,
  signingKeyFromPem,
} from '../../src/crypto/signing-key.ts'
import { canonicalJson, hashJson } from '../../src/domain/shared/canonical-json.ts'

/** A manifest shaped like an outcome manifest; key order deliberately not canonical. */
function sampleManifest(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    manifest_id: '6f1c2a52-8d0e-4c55-9a55-0d7f3e1b9c10',
    outcome_id: '0b4f5b4e-1f3a-4d8e-a7a0-3c2b7e9f8d11',
    subagent_id: 'billing-agent',
    run_id: 'run-42',
    issued_at: '2025-01-02T03:04:05.678Z',
    verdict: 'AGREED',
    directive: 'PROCEED',
    resolved_outcome: 'success',
    subagent_outcome_evidence_hash: `sha256:${'a'.repeat(64)}`,
    interpretations: [
      {
        orchestrator_id: 'orch-a',
        success_criterion_signature: `sha256:${'b'.repeat(64)}`,
        outcome_interpretation: 'success',
        evidence_hash: `sha256:${'a'.repeat(64)}`,
        intended_action: 'proceed',
        revision: 1,
        received_at: '2025-01-02T03:04:00.000Z',
      },
    ],
    interpretation_divergence_receipt: null,
    ground_truth_arbiter_predicate: null,
    action_owner: 'orch-a',
    missing_orchestrators: [],
    supersedes: null,
    audit_seq: 7,
    resolution: { by: null, rationale: 'é — “quoted” 😀' },
    ...overrides,
  }
}

async function envelopeFor(manifest: Record<string, unknown>, key: SigningKey) {
  return { manifest, manifest_digest: hashJson(manifest), jws: await signCanonical(manifest, key) }
}

function b64url(text: string | Uint8Array): string {
  return Buffer.from(text).toString('base64url')
}

const utf8 = new TextEncoder()
const tempRoots: string[] = []
let key: SigningKey
let jwks: Jwks

before(async () => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'arbiter-jws-'))
  tempRoots.push(dataDir)
  key = await loadSigningKey({ dataDir })
  jwks = buildJwks([key.publicJwk])
})

after(async () => {
  await Promise.all(tempRoots.map((dir) => rm(dir, { recursive: true, force: true })))
})

describe('signCanonical', () => {
  it('uses the protected header exactly {alg: "Ed25519", kid}', async () => {
    const jws = await signCanonical(sampleManifest(), key)
    assert.deepEqual(jose.decodeProtectedHeader(jws), { alg: 'Ed25519', kid: key.kid })
    const headerJson = Buffer.from(jws.split('.')[0]!, 'base64url').toString('utf8')
    assert.deepEqual(Object.keys(JSON.parse(headerJson)), ['alg', 'kid'])
  })

  it('signs exactly the UTF-8 bytes of JCS(value)', async () => {
    const manifest = sampleManifest()
    const jws = await signCanonical(manifest, key)
    const payload = Buffer.from(jws.split('.')[1]!, 'base64url')
    assert.deepEqual(new Uint8Array(payload), utf8.encode(canonicalJson(manifest)))
  })

  it('verifies with jose against the published JWK, imported as Ed25519 or as EdDSA', async () => {
    const manifest = sampleManifest()
    const jws = await signCanonical(manifest, key)
    const published = jwks.keys.find((jwk) => jwk.kid === key.kid)!
    for (const alg of ['Ed25519', 'EdDSA']) {
      const result = await jose.compactVerify(jws, await jose.importJWK(published, alg))
      assert.equal(new TextDecoder().decode(result.payload), canonicalJson(manifest))
      assert.equal(result.protectedHeader.kid, key.kid)
    }
  })

  it('gives byte for byte the token jose CompactSign gives for the same key and text', async () => {
    // The last one is large enough to be signed in the thread pool (THREAD_POOL_SIGNING_BYTES).
    const large = Array.from({ length: 8000 }, (_, i) => ({ claim: `claim ${i} é`, value: i * 1.5 }))
    assert.ok((canonicalJson(sampleManifest({ facts: large })).length * 4) / 3 > THREAD_POOL_SIGNING_BYTES)
    for (const manifest of [
      sampleManifest(),
      sampleManifest({ note: 'é ✓ \u{1F600}', n: [1, 2.5, -0] }),
      sampleManifest({ facts: large }),
    ]) {
      const jcs = canonicalJson(manifest)
      const reference = await new jose.CompactSign(utf8.encode(jcs))
        .setProtectedHeader({ alg: 'Ed25519', kid: key.kid })
        .sign(key.privateKey)
      assert.equal(await signCanonical(manifest, key), reference)
    }
  })

  it('signs a large text without holding the event loop (in the thread pool)', async () => {
    const jcs = canonicalJson({ text: 'x'.repeat(2 * 1024 * 1024) })
    let turned = false
    setImmediate(() => {
      turned = true
    })
    const jws = await signCanonicalText(jcs, key)
    assert.ok(turned, 'the event loop turned while the text was signed')
    const small = await signCanonicalText(canonicalJson(sampleManifest()), key)
    assert.ok(small.split('.').length === 3)
    assert.equal(Buffer.from(jws.split('.')[1]!, 'base64url').toString('utf8'), jcs)
    const reference = await new jose.CompactSign(utf8.encode(jcs))
      .setProtectedHeader({ alg: 'Ed25519', kid: key.kid })
      .sign(key.privateKey)
    assert.equal(jws, reference)
  })

  it('verifies with jose resolving the key from the JWKS by kid', async () => {
    const jws = await signCanonical(sampleManifest(), key)
    const resolver = jose.createLocalJWKSet(jwks as jose.JSONWebKeySet)
    const result = await jose.compactVerify(jws, resolver, { algorithms: ['Ed25519'] })
    assert.equal(result.protectedHeader.alg, 'Ed25519')
  })
})

describe('verifyEnvelope', () => {
  it('accepts an envelope signed by a key in the JWKS and names the kid', async () => {
    const envelope = await envelopeFor(sampleManifest(), key)
    assert.deepEqual(await verifyEnvelope(envelope, jwks), { ok: true, kid: key.kid })
  })

  it('survives a JSON round trip (what a saved envelope is)', async () => {
    const envelope = JSON.parse(JSON.stringify(await envelopeFor(sampleManifest(), key)))
    assert.equal((await verifyEnvelope(envelope, jwks)).ok, true)
  })

  it('accepts a token that names the older alg EdDSA', async () => {
    const manifest = sampleManifest()
    const jws = await new jose.CompactSign(utf8.encode(canonicalJson(manifest)))
      .setProtectedHeader({ alg: 'EdDSA', kid: key.kid })
      .sign(key.privateKey)
    const result = await verifyEnvelope({ manifest, manifest_digest: hashJson(manifest), jws }, jwks)
    assert.deepEqual(result, { ok: true, kid: key.kid })
  })

  it('rejects a changed manifest field (digest left as signed)', async () => {
    const envelope = await envelopeFor(sampleManifest(), key)
    const tampered = { ...envelope, manifest: { ...envelope.manifest, directive: 'HALT' } }
    assertInvalid(await verifyEnvelope(tampered, jwks), /manifest_digest .* does not match/)
  })

  it('rejects a changed manifest field even when the digest is recomputed', async () => {
    const envelope = await envelopeFor(sampleManifest(), key)
    const manifest = { ...envelope.manifest, action_owner: 'orch-b' }
    const tampered = { ...envelope, manifest, manifest_digest: hashJson(manifest) }
    assertInvalid(await verifyEnvelope(tampered, jwks), /payload does not match the manifest/)
  })

  it('rejects a tampered manifest_digest', async () => {
    const envelope = await envelopeFor(sampleManifest(), key)
    const tampered = { ...envelope, manifest_digest: `sha256:${'0'.repeat(64)}` }
    assertInvalid(await verifyEnvelope(tampered, jwks), /manifest_digest/)
  })

  it('rejects a tampered signature', async () => {
    const envelope = await envelopeFor(sampleManifest(), key)
    const [header, payload, signature] = envelope.jws.split('.') as [string, string, string]
    // Flip a character in the middle: the last one may only carry padding bits.
    const i = 10
    const flipped = signature.slice(0, i) + (signature[i] === 'A' ? 'B' : 'A') + signature.slice(i + 1)
    const tampered = { ...envelope, jws: `${header}.${payload}.${flipped}` }
    assertInvalid(await verifyEnvelope(tampered, jwks), /signature does not verify/)
  })

  it('rejects a signature by another key that claims the published kid', async () => {
    const manifest = sampleManifest()
    const impostor = await freshKey()
    const jws = await new jose.CompactSign(utf8.encode(canonicalJson(manifest)))
      .setProtectedHeader({ alg: 'Ed25519', kid: key.kid })
      .sign(impostor.privateKey)
    const result = await verifyEnvelope({ manifest, manifest_digest: hashJson(manifest), jws }, jwks)
    assertInvalid(result, /signature does not verify/)
  })

  it('rejects an unsigned alg "none" token', async () => {
    const manifest = sampleManifest()
    const jws = `${b64url(JSON.stringify({ alg: 'none', kid: key.kid }))}.${b64url(canonicalJson(manifest))}.`
    const result = await verifyEnvelope({ manifest, manifest_digest: hashJson(manifest), jws }, jwks)
    assertInvalid(result, /alg "none" is not accepted/)
  })

  it('rejects an HS256 token whose HMAC secret is the public key (key confusion)', async () => {
    const manifest = sampleManifest()
    const publicBytes = Buffer.from(key.publicJwk.x, 'base64url')
    const secrets = [
      new Uint8Array(publicBytes),
      utf8.encode(key.publicJwk.x),
      utf8.encode(JSON.stringify(key.publicJwk)),
    ]
    for (const secret of secrets) {
      const jws = await new jose.CompactSign(utf8.encode(canonicalJson(manifest)))
        .setProtectedHeader({ alg: 'HS256', kid: key.kid })
        .sign(secret)
      const result = await verifyEnvelope({ manifest, manifest_digest: hashJson(manifest), jws }, jwks)
      assertInvalid(result, /alg "HS256" is not accepted/)
    }
  })

  it('rejects a correctly signed payload that is the manifest but not its JCS form', async () => {
    const manifest = sampleManifest()
    for (const nonCanonical of [
      JSON.stringify(manifest),
      JSON.stringify(JSON.parse(canonicalJson(manifest)), null, 2),
    ]) {
      assert.notEqual(nonCanonical, canonicalJson(manifest))
      const jws = await new jose.CompactSign(utf8.encode(nonCanonical))
        .setProtectedHeader({ alg: 'Ed25519', kid: key.kid })
        .sign(key.privateKey)
      const result = await verifyEnvelope({ manifest, manifest_digest: hashJson(manifest), jws }, jwks)
      assertInvalid(result, /not its canonical form/)
    }
  })

  it('rejects a kid that is not in the JWKS, naming it', async () => {
    const envelope = await envelopeFor(sampleManifest(), key)
    const other = await freshKey()
    assertInvalid(
      await verifyEnvelope(envelope, buildJwks([other.publicJwk])),
      new RegExp(`unknown kid "${key.kid}"`),
    )
  })

  it('rejects a token without kid', async () => {
    const manifest = sampleManifest()
    const jws = await new jose.CompactSign(utf8.encode(canonicalJson(manifest)))
      .setProtectedHeader({ alg: 'Ed25519' })
      .sign(key.privateKey)
    const result = await verifyEnvelope({ manifest, manifest_digest: hashJson(manifest), jws }, jwks)
    assertInvalid(result, /no kid/)
  })

  it('rejects a JWKS entry for the kid that is not an Ed25519 OKP key', async () => {
    const envelope = await envelopeFor(sampleManifest(), key)
    const wrongKind = { keys: [{ kty: 'oct', k: key.publicJwk.x, kid: key.kid }] }
    assertInvalid(await verifyEnvelope(envelope, wrongKind), /not an Ed25519 OKP key/)
  })

  it('accepts audit_seq, the log position outside the signature, as an integer or null', async () => {
    const { audit_seq: _signedSeq, ...current } = sampleManifest()
    const envelope = await envelopeFor(current, key)
    for (const auditSeq of [42, null]) {
      assert.deepEqual(await verifyEnvelope({ ...envelope, audit_seq: auditSeq }, jwks), {
        ok: true,
        kid: key.kid,
      })
    }
  })

  it('refuses an envelope audit_seq that contradicts the one an older manifest signed inside', async () => {
    const envelope = await envelopeFor(sampleManifest(), key)
    assertInvalid(await verifyEnvelope({ ...envelope, audit_seq: 42 }, jwks), /contradicts/)
  })

  it('rejects malformed envelopes with a reason naming the part', async () => {
    const envelope = await envelopeFor(sampleManifest(), key)
    const cases: [unknown, RegExp][] = [
      [null, /not a JSON object/],
      [[envelope], /not a JSON object/],
      [{ ...envelope, manifest: 'x' }, /envelope.manifest/],
      [{ ...envelope, manifest_digest: 1 }, /envelope.manifest_digest/],
      [{ manifest: envelope.manifest, manifest_digest: envelope.manifest_digest }, /envelope.jws/],
      [{ ...envelope, note: 'unsigned' }, /unexpected field\(s\): note/],
      [{ ...envelope, audit_seq: '7' }, /envelope.audit_seq/],
      [{ ...envelope, audit_seq: 1.5 }, /envelope.audit_seq/],
      [{ ...envelope, jws: 'a.b' }, /not a compact JWS/],
      [{ ...envelope, jws: `${b64url('[1]')}.e30.AA` }, /protected header/],
    ]
    for (const [input, reason] of cases) assertInvalid(await verifyEnvelope(input, jwks), reason)
  })
})

describe('rotation', () => {
  it('signs with the new key from then on; a JWKS with both kids verifies old and new manifests', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'arbiter-rotation-'))
    tempRoots.push(dataDir)
    const oldKey = await loadSigningKey({ dataDir })
    const oldEnvelope = await envelopeFor(sampleManifest({ manifest_id: 'old' }), oldKey)

    await rotateDataDirSigningKey(dataDir)
    const newKey = await loadSigningKey({ dataDir })
    assert.notEqual(newKey.kid, oldKey.kid)
    const newEnvelope = await envelopeFor(sampleManifest({ manifest_id: 'new' }), newKey)
    assert.equal(jose.decodeProtectedHeader(newEnvelope.jws).kid, newKey.kid)

    const both = buildJwks([oldKey.publicJwk, newKey.publicJwk])
    assert.deepEqual(await verifyEnvelope(oldEnvelope, both), { ok: true, kid: oldKey.kid })
    assert.deepEqual(await verifyEnvelope(newEnvelope, both), { ok: true, kid: newKey.kid })

    const onlyNew = buildJwks([newKey.publicJwk])
    assertInvalid(await verifyEnvelope(oldEnvelope, onlyNew), new RegExp(`unknown kid "${oldKey.kid}"`))
    assert.deepEqual(await verifyEnvelope(newEnvelope, onlyNew), { ok: true, kid: newKey.kid })
  })
})

describe('verifyCompactAgainstJwks (audit checkpoints)', () => {
  it('returns the kid and the signed payload, which is JCS(checkpoint)', async () => {
    const checkpoint = { seq: 12, hash: `sha256:${'c'.repeat(64)}`, at: '2025-01-02T03:04:05.000Z' }
    const result = await verifyCompactAgainstJwks(await signCanonical(checkpoint, key), jwks)
    assert.deepEqual(result, { ok: true, kid: key.kid, payload: canonicalJson(checkpoint) })
  })

  it('rejects a non-string input without throwing', async () => {
    const result = await verifyCompactAgainstJwks(42 as unknown as string, jwks)
    assertInvalid(result, /not a string/)
  })
})

describe('buildJwks', () => {
  it('keeps the first key per kid, in the order given, with public members only', async () => {
    const a = await freshKey()
    const b = await freshKey()
    const leaky = { ...a.publicJwk, d: 'private' } as typeof a.publicJwk
    const set = buildJwks([leaky, b.publicJwk, a.publicJwk, b.publicJwk])
    assert.deepEqual(set, { keys: [a.publicJwk, b.publicJwk] })
    assert.equal('d' in set.keys[0]!, false)
  })
})

async function freshKey(): Promise<SigningKey> {
  const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  return signingKeyFromPem(pem)
}

function assertInvalid(result: { ok: boolean; reason?: string }, reason: RegExp): void {
  assert.equal(result.ok, false, 'expected the check to fail')
  assert.match(result.reason ?? '', reason)
}
