import assert from 'node:assert/strict'
import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { CompactSign, calculateJwkThumbprint, exportJWK, type JWK } from 'jose'
import {
  canonicalJson,
  type JsonWebKeySet,
  type JwsCheck,
  JwsError,
  sha256Digest,
  verifyCompactJws,
  verifyManifestEnvelope,
} from '../src/node.ts'

interface TestKey {
  privateKey: KeyObject
  publicJwk: JWK & { kid: string; x: string }
}

async function freshKey(): Promise<TestKey> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519')
  const jwk = await exportJWK(publicKey)
  const kid = await calculateJwkThumbprint(jwk, 'sha256')
  return { privateKey, publicJwk: { ...jwk, kid, x: jwk.x!, alg: 'Ed25519', use: 'sig' } }
}

const utf8 = new TextEncoder()
const b64url = (text: string) => Buffer.from(text).toString('base64url')

async function sign(payload: string, key: TestKey, header: Record<string, unknown> = {}): Promise<string> {
  return new CompactSign(utf8.encode(payload))
    .setProtectedHeader({ alg: 'Ed25519', kid: key.publicJwk.kid, ...header })
    .sign(key.privateKey)
}

async function envelopeOf(manifest: Record<string, unknown>, key: TestKey) {
  const canonical = canonicalJson(manifest)
  return { manifest, manifest_digest: sha256Digest(canonical), jws: await sign(canonical, key) }
}

async function refusal(promise: Promise<unknown>): Promise<JwsError> {
  try {
    await promise
  } catch (err) {
    assert.ok(err instanceof JwsError, `expected a JwsError, got ${String(err)}`)
    return err
  }
  assert.fail('expected a refusal')
}

const key = await freshKey()
const jwks: JsonWebKeySet = { keys: [key.publicJwk] }
const manifest = {
  manifest_id: '6f1c7c5e-0d4b-4a57-9f55-2f1a3c0d9b11',
  verdict: 'AGREED',
  directive: 'PROCEED',
  interpretations: [{ orchestrator_id: 'orch-a', revision: 1 }],
  resolution: null,
}

describe('verifyCompactJws', () => {
  it('returns the kid, the algorithm and the payload of a token a JWKS key signed', async () => {
    for (const alg of ['Ed25519', 'EdDSA'] as const) {
      const jws = await sign('{"a":1}', key, { alg })
      assert.deepEqual(await verifyCompactJws(jws, jwks), { kid: key.publicJwk.kid, alg, payload: '{"a":1}' })
    }
  })

  it('imports only the public members of a JWKS entry (a leaked `d` changes nothing)', async () => {
    const jws = await sign('{}', key)
    const leaky = { keys: [{ ...key.publicJwk, d: 'not-a-private-key' }] }
    assert.equal((await verifyCompactJws(jws, leaky)).kid, key.publicJwk.kid)
  })

  const publicBytes = Buffer.from(key.publicJwk.x, 'base64url')
  const cases: [string, () => Promise<unknown>, JwsCheck, RegExp][] = [
    ['a non-string', async () => 42, 'malformed', /not a string/],
    ['two parts', async () => 'a.b', 'malformed', /three base64url parts/],
    ['a part that is not base64url', async () => 'a+b.c.d', 'malformed', /three base64url parts/],
    [
      'a header that is not a JSON object',
      async () => `${b64url('[1]')}.e30.AA`,
      'malformed',
      /protected header/,
    ],
    [
      'alg none (unsigned)',
      async () => `${b64url(JSON.stringify({ alg: 'none', kid: key.publicJwk.kid }))}.${b64url('{}')}.`,
      'alg',
      /alg "none" is not accepted/,
    ],
    [
      'HS256 keyed with the public key bytes (key confusion)',
      () =>
        new CompactSign(utf8.encode('{}'))
          .setProtectedHeader({ alg: 'HS256', kid: key.publicJwk.kid })
          .sign(new Uint8Array(publicBytes)),
      'alg',
      /alg "HS256" is not accepted/,
    ],
    [
      'HS256 keyed with the JWK text',
      () =>
        new CompactSign(utf8.encode('{}'))
          .setProtectedHeader({ alg: 'HS256', kid: key.publicJwk.kid })
          .sign(utf8.encode(JSON.stringify(key.publicJwk))),
      'alg',
      /alg "HS256" is not accepted/,
    ],
    [
      'an alg of another key type',
      async () => `${b64url(JSON.stringify({ alg: 'ES256', kid: key.publicJwk.kid }))}.e30.AA`,
      'alg',
      /alg "ES256"/,
    ],
    ['no alg', async () => `${b64url(JSON.stringify({ kid: key.publicJwk.kid }))}.e30.AA`, 'alg', /alg null/],
    ['a crit extension', () => sign('{}', key, { crit: ['b64'], b64: true }), 'malformed', /crit/],
    ['no kid', () => sign('{}', key, { kid: undefined }), 'kid', /no kid/],
    ['an unknown kid', () => sign('{}', key, { kid: 'nobody' }), 'kid', /unknown kid "nobody"/],
  ]
  for (const [name, token, check, message] of cases) {
    it(`refuses ${name}`, async () => {
      const error = await refusal(verifyCompactJws(await token(), jwks))
      assert.equal(error.check, check)
      assert.match(error.message, message)
    })
  }

  it('refuses a JWKS entry for the kid that is not an Ed25519 OKP key', async () => {
    const jws = await sign('{}', key)
    const error = await refusal(
      verifyCompactJws(jws, { keys: [{ kty: 'oct', k: key.publicJwk.x, kid: key.publicJwk.kid }] }),
    )
    assert.equal(error.check, 'key')
  })

  it('refuses a signature by another key that claims a published kid', async () => {
    const impostor = await freshKey()
    const jws = await sign('{}', {
      ...impostor,
      publicJwk: { ...impostor.publicJwk, kid: key.publicJwk.kid },
    })
    const error = await refusal(verifyCompactJws(jws, jwks))
    assert.equal(error.check, 'signature')
  })

  it('refuses every single-character change of a signed token', async () => {
    const jws = await sign(canonicalJson(manifest), key)
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: jws.length - 2 }),
        fc.constantFrom('A', 'B', 'x', '-'),
        async (index, ch) => {
          fc.pre(jws[index] !== ch && jws[index] !== '.')
          const tampered = jws.slice(0, index) + ch + jws.slice(index + 1)
          // The last character of a part may carry only padding bits; every other change must be refused.
          await assert.rejects(verifyCompactJws(tampered, jwks), JwsError)
        },
      ),
      { numRuns: 60 },
    )
  })
})

describe('verifyManifestEnvelope', () => {
  it('accepts an envelope whose audit_seq is inside the signed manifest (older manifests)', async () => {
    const envelope = await envelopeOf({ ...manifest, audit_seq: 7 }, key)
    const verified = await verifyManifestEnvelope(envelope, jwks)
    assert.equal(verified.kid, key.publicJwk.kid)
    assert.equal(verified.auditSeq, 7)
    assert.equal(verified.manifestDigest, envelope.manifest_digest)
  })

  it('accepts an envelope that carries audit_seq beside the manifest, or null before sequencing', async () => {
    const envelope = await envelopeOf(manifest, key)
    assert.equal((await verifyManifestEnvelope({ ...envelope, audit_seq: 12 }, jwks)).auditSeq, 12)
    assert.equal((await verifyManifestEnvelope({ ...envelope, audit_seq: null }, jwks)).auditSeq, null)
    assert.equal((await verifyManifestEnvelope(envelope, jwks)).auditSeq, null)
  })

  it('accepts the same audit_seq in both places and refuses an envelope that contradicts the signed one', async () => {
    const envelope = await envelopeOf({ ...manifest, audit_seq: 7 }, key)
    assert.equal((await verifyManifestEnvelope({ ...envelope, audit_seq: 7 }, jwks)).auditSeq, 7)
    const error = await refusal(verifyManifestEnvelope({ ...envelope, audit_seq: 8 }, jwks))
    assert.equal(error.check, 'audit_seq')
  })

  it('refuses an audit_seq that is not a positive integer', async () => {
    const envelope = await envelopeOf(manifest, key)
    for (const seq of [0, -1, 1.5, '3', 2 ** 53]) {
      const error = await refusal(verifyManifestEnvelope({ ...envelope, audit_seq: seq }, jwks))
      assert.equal(error.check, 'audit_seq', `audit_seq ${seq}`)
    }
  })

  it('refuses a changed field (digest left as signed), then with the digest recomputed', async () => {
    const envelope = await envelopeOf(manifest, key)
    const changed = { ...manifest, directive: 'HALT' }
    assert.equal(
      (await refusal(verifyManifestEnvelope({ ...envelope, manifest: changed }, jwks))).check,
      'digest',
    )
    const recomputed = {
      ...envelope,
      manifest: changed,
      manifest_digest: sha256Digest(canonicalJson(changed)),
    }
    const error = await refusal(verifyManifestEnvelope(recomputed, jwks))
    assert.equal(error.check, 'payload')
    assert.match(error.message, /payload does not match the manifest/)
  })

  it('refuses a signed payload that is the manifest but not its JCS bytes', async () => {
    for (const text of [
      JSON.stringify(manifest, null, 2),
      JSON.stringify({
        directive: 'PROCEED',
        manifest_id: manifest.manifest_id,
        verdict: 'AGREED',
        interpretations: manifest.interpretations,
        resolution: null,
      }),
    ]) {
      assert.notEqual(text, canonicalJson(manifest))
      const jws = await sign(text, key)
      const envelope = { manifest, manifest_digest: sha256Digest(canonicalJson(manifest)), jws }
      const error = await refusal(verifyManifestEnvelope(envelope, jwks))
      assert.equal(error.check, 'payload')
      assert.match(error.message, /not its canonical form/)
    }
  })

  it('refuses malformed envelopes, naming the member', async () => {
    const envelope = await envelopeOf(manifest, key)
    const cases: [unknown, RegExp][] = [
      [null, /not a JSON object/],
      [[envelope], /not a JSON object/],
      [{ ...envelope, manifest: 'x' }, /envelope.manifest /],
      [{ ...envelope, manifest_digest: 1 }, /envelope.manifest_digest/],
      [{ manifest, manifest_digest: envelope.manifest_digest }, /envelope.jws/],
      [{ ...envelope, note: 'unsigned' }, /unexpected field\(s\): note/],
    ]
    for (const [input, message] of cases) {
      const error = await refusal(verifyManifestEnvelope(input, jwks))
      assert.equal(error.check, 'malformed')
      assert.match(error.message, message)
    }
  })

  it('verifies any JSON manifest it is given signed, and refuses it once any member changes', async () => {
    const manifests = fc.dictionary(
      fc.string({ minLength: 1, maxLength: 8 }),
      fc.jsonValue({ maxDepth: 3 }),
      {
        minKeys: 1,
        maxKeys: 6,
      },
    )
    await fc.assert(
      fc.asyncProperty(manifests, fc.jsonValue({ maxDepth: 2 }), async (value, replacement) => {
        const parsed = JSON.parse(JSON.stringify(value)) as Record<string, unknown>
        fc.pre(!('audit_seq' in parsed))
        const envelope = await envelopeOf(parsed, key)
        assert.equal((await verifyManifestEnvelope(envelope, jwks)).manifestDigest, envelope.manifest_digest)
        const member = Object.keys(parsed)[0]!
        const changed = { ...parsed, [member]: replacement }
        fc.pre(canonicalJson(changed) !== canonicalJson(parsed))
        const tampered = {
          ...envelope,
          manifest: changed,
          manifest_digest: sha256Digest(canonicalJson(changed)),
        }
        await assert.rejects(verifyManifestEnvelope(tampered, jwks), JwsError)
      }),
      { numRuns: 40 },
    )
  })
})
