import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  ed25519KeyId,
  formatVerifierKey,
  isValidKeyName,
  NoteError,
  type NoteErrorReason,
  type NoteVerifier,
  noteVerifier,
  parseVerifierKey,
  signNote,
  verifyNote,
  verifyNoteAsync,
} from '../src/node.ts'
import { ed25519FromSeed, fromHex, parseGoSignerKey, readVector } from './vectors.ts'

interface GoNoteVectors {
  peterSignerKey: string
  peterVerifierKey: string
  enochVerifierKey: string
  enochSeedHex: string
  text: string
  peterSignatureLine: string
  enochSignatureLine: string
  signedByPeter: string
  signedByPeterThenEnoch: string
  badVerifierKeys: string[]
}
interface C2spNoteVectors {
  introductionNote: string
  exampleVerifierKey: string
  exampleNote: string
}

const go = readVector<GoNoteVectors>('note/golang-mod-sumdb-note.json')
const c2sp = readVector<C2spNoteVectors>('note/c2sp-signed-note.json')
const formatsKeys = readVector<{ keys: Record<string, string> }>(
  'note/transparency-dev-formats-keys.json',
).keys

const peter = parseGoSignerKey(go.peterSignerKey)
const enoch = { name: 'EnochRoot', privateKey: ed25519FromSeed(fromHex(go.enochSeedHex)) }
const peterVerifier = parseVerifierKey(go.peterVerifierKey)
const enochVerifier = parseVerifierKey(go.enochVerifierKey)

/** Inserts text at a UTF-8 byte offset, as the Go tests splice `sig[:60] + "ABCD" + sig[60:]`. */
function insertAtByte(line: string, offset: number, text: string): string {
  const bytes = Buffer.from(line, 'utf8')
  return Buffer.concat([bytes.subarray(0, offset), Buffer.from(text), bytes.subarray(offset)]).toString(
    'utf8',
  )
}

/** Go's text signed by another key, under PeterNeumann's name and key ID. */
function forgedByImpostor(): string {
  const impostor = signNote(go.text, {
    name: 'PeterNeumann',
    privateKey: generateKeyPairSync('ed25519').privateKey,
  })
  const signature = Buffer.from(/ (\S+)\n$/.exec(impostor)![1]!, 'base64')
  signature.writeUInt32BE(peterVerifier.keyId)
  return `${go.text}\n— PeterNeumann ${signature.toString('base64')}\n`
}

function refusal(fn: () => unknown): NoteErrorReason {
  try {
    fn()
  } catch (err) {
    if (err instanceof NoteError) return err.reason
    throw err
  }
  assert.fail('expected a NoteError')
}

describe('signNote', () => {
  it('signs byte for byte as golang.org/x/mod/sumdb/note does', () => {
    assert.equal(signNote(go.text, peter), go.signedByPeter)
  })

  it("reproduces EnochRoot's signature from its all-zero seed", () => {
    assert.equal(signNote(go.text, enoch), `${go.text}\n${go.enochSignatureLine}`)
  })

  it('signs every transparency-dev/formats key under the key ID its verifier key names', () => {
    for (const name of ['log', 'known1', 'known2', 'unknown']) {
      const signer = parseGoSignerKey(formatsKeys[`${name}SK`]!)
      const verifier = parseVerifierKey(formatsKeys[`${name}VK`]!)
      assert.equal(ed25519KeyId(signer.name, signer.privateKey), signer.keyId)
      assert.equal(formatVerifierKey(noteVerifier(signer.name, signer.privateKey)), formatsKeys[`${name}VK`])
      const note = signNote('TestParseCheckpoint\n42\nYWJjZGVm\n', signer)
      assert.equal(verifyNote(note, [verifier]).verified.length, 1)
    }
  })

  it('refuses text without a final newline, with control characters, or a bad key name', () => {
    assert.equal(
      refusal(() => signNote('abc', peter)),
      'malformed',
    )
    assert.equal(
      refusal(() => signNote('a\tb\n', peter)),
      'malformed',
    )
    assert.equal(
      refusal(() => signNote(go.text, { ...peter, name: 'bad name' })),
      'malformed',
    )
    assert.equal(
      refusal(() => signNote(go.text, { ...peter, name: 'a+b' })),
      'malformed',
    )
  })

  it('round-trips any printable text through verifyNote', () => {
    const text = fc
      .array(fc.oneof(fc.constant('\n'), fc.string({ unit: 'grapheme', maxLength: 8 })), { maxLength: 8 })
      .map((parts) => `${parts.join('')}\n`)
      .filter((t) => [...t].every((c) => c === '\n' || c.charCodeAt(0) >= 0x20))
    fc.assert(
      fc.property(text, (t) => {
        const opened = verifyNote(signNote(t, peter), [peterVerifier])
        assert.equal(opened.text, t)
      }),
      { numRuns: 200 },
    )
  })
})

describe('verifier keys', () => {
  it('parse the published keys and format them back unchanged', () => {
    for (const vkey of [go.peterVerifierKey, go.enochVerifierKey, c2sp.exampleVerifierKey]) {
      assert.equal(formatVerifierKey(parseVerifierKey(vkey)), vkey)
    }
    assert.equal(peterVerifier.name, 'PeterNeumann')
    assert.equal(peterVerifier.keyId, 0xc74f20a3)
  })

  it('derive the key ID as SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)[:4] for signer and verifier alike', () => {
    assert.equal(ed25519KeyId(peter.name, peter.privateKey), 0xc74f20a3)
    assert.equal(ed25519KeyId(enoch.name, enoch.privateKey), 0xaf0cfe78)
    assert.equal(formatVerifierKey(noteVerifier(enoch.name, enoch.privateKey)), go.enochVerifierKey)
  })

  it('refuse every proper substring and every single-character change of a verifier key (as the Go test does)', () => {
    const vkey = go.peterVerifierKey
    for (let i = 0; i <= vkey.length; i++) {
      for (let j = i + 1; j <= vkey.length; j++) {
        if (i === 0 && j === vkey.length) continue
        assert.throws(() => parseVerifierKey(vkey.slice(i, j)), NoteError, vkey.slice(i, j))
      }
    }
    for (let i = 0; i < vkey.length; i++) {
      const changed = vkey.slice(0, i) + String.fromCharCode(vkey.charCodeAt(i) + 1) + vkey.slice(i + 1)
      assert.throws(() => parseVerifierKey(changed), NoteError, changed)
    }
  })

  it('refuse a key of the wrong length or of an unknown type even with a matching key ID', () => {
    for (const vkey of go.badVerifierKeys) assert.throws(() => parseVerifierKey(vkey), NoteError, vkey)
  })

  it('refuse an uppercase key ID, which the hex encoding of the spec never produces', () => {
    assert.throws(() => parseVerifierKey(go.peterVerifierKey.replace('c74f20a3', 'C74F20A3')), NoteError)
  })
})

describe('verifyNote', () => {
  const twoSigned = `${go.text}\n${go.peterSignatureLine}${go.enochSignatureLine}`

  it('verifies the example of the signed-note spec with its verifier key', () => {
    const opened = verifyNote(c2sp.exampleNote, [parseVerifierKey(c2sp.exampleVerifierKey)])
    assert.equal(opened.text, 'This is an example message.\n')
    assert.deepEqual(
      opened.verified.map((s) => [s.name, s.keyId]),
      [['example.com/foo', 0x530d903a]],
    )
  })

  it('separates the text at the last blank line, keeping blank lines inside it', () => {
    // No key is published for the spec's first example: it parses, and is refused as unverified.
    assert.equal(
      refusal(() => verifyNote(c2sp.introductionNote, [peterVerifier])),
      'unverified',
    )
    const text = 'first\n\nsecond\n\n'
    assert.equal(verifyNote(signNote(text, peter), [peterVerifier]).text, text)
  })

  it('lists verified and unknown signatures apart', () => {
    const opened = verifyNote(twoSigned, [peterVerifier])
    assert.equal(opened.text, go.text)
    assert.deepEqual(
      opened.verified.map((s) => s.name),
      ['PeterNeumann'],
    )
    assert.deepEqual(
      opened.unverified.map((s) => [s.name, s.keyId]),
      [['EnochRoot', 0xaf0cfe78]],
    )
    const both = verifyNote(twoSigned, [peterVerifier, enochVerifier])
    assert.deepEqual(
      both.verified.map((s) => s.name),
      ['PeterNeumann', 'EnochRoot'],
    )
    assert.deepEqual(both.unverified, [])
  })

  it('accepts the bytes of a note as well as its text', () => {
    assert.equal(verifyNote(Buffer.from(go.signedByPeter, 'utf8'), [peterVerifier]).text, go.text)
  })

  it('refuses a note no known key signed', () => {
    assert.equal(
      refusal(() => verifyNote(twoSigned, [])),
      'unverified',
    )
  })

  it('ignores a signature whose name or key ID only half matches a known key', () => {
    const otherKey = noteVerifier('PeterNeumann', generateKeyPairSync('ed25519').publicKey)
    assert.equal(
      refusal(() => verifyNote(go.signedByPeter, [otherKey])),
      'unverified',
    )
    const renamed = go.signedByPeter.replace('— PeterNeumann', '— PeterNeuman')
    assert.equal(
      refusal(() => verifyNote(renamed, [peterVerifier])),
      'unverified',
    )
  })

  it('refuses the whole note when a known key signature fails', () => {
    const corrupted = `${go.text}\n${insertAtByte(go.peterSignatureLine, 60, 'ABCD')}`
    assert.equal(
      refusal(() => verifyNote(corrupted, [peterVerifier])),
      'invalid-signature',
    )
  })

  it('refuses tampered text', () => {
    const tampered = go.signedByPeter.replace('cryptography', 'cryptographY')
    assert.equal(
      refusal(() => verifyNote(tampered, [peterVerifier])),
      'invalid-signature',
    )
    const extraLine = go.signedByPeter.replace('is.\n', 'is.\nnot\n')
    assert.equal(
      refusal(() => verifyNote(extraLine, [peterVerifier])),
      'invalid-signature',
    )
  })

  it('refuses a signature by the right name and key ID but the wrong key', () => {
    assert.equal(
      refusal(() => verifyNote(forgedByImpostor(), [peterVerifier])),
      'invalid-signature',
    )
  })

  it('counts repeated signatures once and keeps distinct unknown ones', () => {
    const enoch = go.enochSignatureLine
    const enochAbcd = insertAtByte(enoch, 60, 'ABCD')
    const note = `${go.text}\n${go.peterSignatureLine}${go.peterSignatureLine}${enoch}${enoch}${enochAbcd}`
    const opened = verifyNote(note, [peterVerifier])
    assert.equal(opened.verified.length, 1)
    assert.deepEqual(
      opened.unverified.map((s) => s.signature),
      [
        'rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=',
        'rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5nABCD2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=',
      ],
    )
  })

  it('refuses a note whose known key appears twice among the verifiers', () => {
    assert.equal(
      refusal(() =>
        verifyNote(`${go.text}\n${go.enochSignatureLine}`, [enochVerifier, peterVerifier, enochVerifier]),
      ),
      'ambiguous-key',
    )
    assert.ok(verifyNote(go.signedByPeter, [enochVerifier, peterVerifier, enochVerifier]))
  })

  it('refuses more than 100 signatures', () => {
    const note = `${go.text}\n${go.peterSignatureLine.repeat(101)}`
    assert.equal(
      refusal(() => verifyNote(note, [peterVerifier])),
      'malformed',
    )
    assert.ok(verifyNote(`${go.text}\n${go.peterSignatureLine.repeat(100)}`, [peterVerifier]))
  })

  it('refuses each malformed message of the Go test suite', () => {
    // The bad messages of golang.org/x/mod sumdb/note/note_test.go (TestOpen).
    const sig = go.peterSignatureLine
    const malformed: (string | Uint8Array)[] = [
      go.text,
      `${go.text}\n`,
      `${go.text}\n${sig.slice(0, -1)}`,
      `\u0001${go.text}\n${sig}`,
      Buffer.concat([Buffer.from([0xff]), Buffer.from(`${go.text}\n${sig}`)]),
      `${go.text}\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=`,
      `${go.text}\n${sig}Unexpected line.\n`,
    ]
    for (const note of malformed) {
      assert.equal(
        refusal(() => verifyNote(note, [peterVerifier])),
        'malformed',
        String(note),
      )
    }
  })

  it('refuses other malformed signature lines', () => {
    const b64 = go.peterSignatureLine.slice('— PeterNeumann '.length, -1)
    const lines = [
      `- PeterNeumann ${b64}`, // hyphen, not an em dash
      `—PeterNeumann ${b64}`,
      `— PeterNeumann  ${b64}`,
      `— PeterNeumann ${b64} `,
      `— PeterNeumann ${b64.replace('=', '')}`,
      `— PeterNeumann ${Buffer.from(b64, 'base64').toString('base64url')}`,
      `— PeterNeumann ${Buffer.from(b64, 'base64').subarray(0, 4).toString('base64')}`,
      `— PeterNeumann`,
      `— ${b64}`,
      '',
    ]
    for (const line of lines) {
      assert.equal(
        refusal(() => verifyNote(`${go.text}\n${line}\n`, [peterVerifier])),
        'malformed',
        line,
      )
    }
  })

  it('refuses text that is not well-formed Unicode', () => {
    assert.equal(
      refusal(() => verifyNote(`\ud800${go.signedByPeter}`, [peterVerifier])),
      'malformed',
    )
  })
})

describe('verifyNoteAsync (Ed25519 through WebCrypto)', () => {
  const twoSigned = `${go.text}\n${go.peterSignatureLine}${go.enochSignatureLine}`

  async function asyncRefusal(
    note: string,
    verifiers: NoteVerifier[],
  ): Promise<NoteErrorReason | 'accepted'> {
    try {
      await verifyNoteAsync(note, verifiers)
      return 'accepted'
    } catch (err) {
      if (err instanceof NoteError) return err.reason
      throw err
    }
  }

  it('opens what verifyNote opens, to the same result', async () => {
    for (const verifiers of [[peterVerifier], [enochVerifier], [peterVerifier, enochVerifier]]) {
      assert.deepEqual(await verifyNoteAsync(twoSigned, verifiers), verifyNote(twoSigned, verifiers))
    }
  })

  it('refuses what verifyNote refuses, for the same reason', async () => {
    const cases: [string, NoteVerifier[]][] = [
      [go.signedByPeter.replace('cryptography', 'cryptographY'), [peterVerifier]],
      [`${go.text}\n${insertAtByte(go.peterSignatureLine, 60, 'ABCD')}`, [peterVerifier]],
      [forgedByImpostor(), [peterVerifier]],
      [twoSigned, []],
      [`${go.text}\n${go.enochSignatureLine}`, [enochVerifier, enochVerifier]],
      [`${go.text}\n${go.peterSignatureLine.repeat(101)}`, [peterVerifier]],
      [`\u0001${go.signedByPeter}`, [peterVerifier]],
    ]
    for (const [note, verifiers] of cases) {
      const expected = refusal(() => verifyNote(note, verifiers))
      assert.equal(await asyncRefusal(note, verifiers), expected, note)
    }
  })
})

describe('Ed25519 keys', () => {
  it('are the same verifier given as raw bytes, a JWK, a public or a private KeyObject', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519')
    const jwk = publicKey.export({ format: 'jwk' })
    const raw = Buffer.from(jwk.x!, 'base64url')
    const verifiers = [raw, { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, publicKey, privateKey].map((key) =>
      noteVerifier('example.com/log', key),
    )
    for (const verifier of verifiers) assert.deepEqual(verifier, verifiers[0])
    assert.deepEqual(Buffer.from(verifiers[0]!.publicKey), raw)
  })

  it('refuse keys that are not Ed25519 public keys', () => {
    const x25519 = generateKeyPairSync('x25519').publicKey
    const notKeys = [
      new Uint8Array(31),
      { kty: 'OKP', crv: 'Ed448', x: 'AAAA' },
      { kty: 'EC', crv: 'P-256', x: Buffer.alloc(32).toString('base64url') },
      { kty: 'OKP', crv: 'Ed25519', x: Buffer.alloc(31).toString('base64url') },
      x25519,
    ]
    for (const key of notKeys) assert.throws(() => noteVerifier('example.com/log', key), NoteError)
  })
})

describe('isValidKeyName', () => {
  it('accepts URL-like names and refuses empty ones, Unicode spaces and pluses', () => {
    assert.ok(isValidKeyName('arbiter.local/log/0b9d7c1e-4a8f-4a51-9d0f-7d2d1c9c7a11'))
    for (const name of ['', 'a b', 'a+b', 'a\u00a0b', 'a\u2003b', 'a\u0085b', 'a\nb']) {
      assert.ok(!isValidKeyName(name), JSON.stringify(name))
    }
  })
})
