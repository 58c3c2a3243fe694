import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  CheckpointError,
  formatCheckpoint,
  leafHash,
  NoteError,
  noteVerifier,
  openCheckpoint,
  parseCheckpoint,
  parseVerifierKey,
  rootFromLeafHashes,
  signNote,
  verifyNote,
} from '../src/node.ts'
import { b64, hex, parseGoSignerKey, readVector, referenceLeafHashes } from './vectors.ts'

interface SumdbTree {
  leafInput: string
  body: string
  origin: string
  treeSize: number
}

const sumdb = readVector<SumdbTree>('checkpoint/golang-mod-sumdb-tree.json')
const c2spExample = readVector<{ exampleNote: string }>('checkpoint/c2sp-tlog-checkpoint.json').exampleNote
const formatsKeys = readVector<{ keys: Record<string, string> }>(
  'note/transparency-dev-formats-keys.json',
).keys
const root8 = rootFromLeafHashes(referenceLeafHashes())
const ORIGIN = 'arbiter.local/log/0b9d7c1e-4a8f-4a51-9d0f-7d2d1c9c7a11'

describe('formatCheckpoint', () => {
  it('writes the go.sum tree note byte for byte', () => {
    const body = formatCheckpoint({
      origin: sumdb.origin,
      treeSize: sumdb.treeSize,
      rootHash: leafHash(Buffer.from(sumdb.leafInput)),
    })
    assert.equal(body, sumdb.body)
  })

  it('writes origin, decimal size and base64 root, each ending in a newline', () => {
    assert.equal(
      formatCheckpoint({ origin: ORIGIN, treeSize: 8, rootHash: root8 }),
      `${ORIGIN}\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=\n`,
    )
  })

  it('refuses an empty or multi-line origin, a size that is not an integer ≥ 0, a root not 32 bytes', () => {
    for (const checkpoint of [
      { origin: '', treeSize: 8, rootHash: root8 },
      { origin: 'a\nb', treeSize: 8, rootHash: root8 },
      { origin: ORIGIN, treeSize: -1, rootHash: root8 },
      { origin: ORIGIN, treeSize: 1.5, rootHash: root8 },
      { origin: ORIGIN, treeSize: 2 ** 53, rootHash: root8 },
      { origin: ORIGIN, treeSize: 8, rootHash: root8.subarray(1) },
    ]) {
      assert.throws(() => formatCheckpoint(checkpoint), CheckpointError)
    }
  })
})

describe('parseCheckpoint', () => {
  it('reads the example of the tlog-checkpoint spec', () => {
    const text = c2spExample.slice(0, c2spExample.lastIndexOf('\n\n') + 1)
    const checkpoint = parseCheckpoint(text)
    assert.equal(checkpoint.origin, 'example.com/behind-the-sofa')
    assert.equal(checkpoint.treeSize, 20852163)
    assert.equal(hex(checkpoint.rootHash), hex(b64('CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=')))
    assert.deepEqual(checkpoint.extensions, [])
  })

  it('reads the go.sum tree note, whose origin has spaces (origins are opaque to clients)', () => {
    const checkpoint = parseCheckpoint(sumdb.body)
    assert.equal(checkpoint.origin, sumdb.origin)
    assert.equal(checkpoint.treeSize, sumdb.treeSize)
  })

  it('keeps extension lines', () => {
    const body = formatCheckpoint({ origin: ORIGIN, treeSize: 8, rootHash: root8 })
    assert.deepEqual(parseCheckpoint(`${body}lots\nof\nlines\n`).extensions, ['lots', 'of', 'lines'])
  })

  it('round-trips any checkpoint', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((s) => !s.includes('\n')),
        fc.nat({ max: Number.MAX_SAFE_INTEGER }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        (origin, treeSize, rootHash) => {
          const parsed = parseCheckpoint(formatCheckpoint({ origin, treeSize, rootHash }))
          assert.deepEqual(
            { ...parsed, rootHash: hex(parsed.rootHash) },
            { origin, treeSize, rootHash: hex(rootHash), extensions: [] },
          )
        },
      ),
    )
  })

  it('refuses every malformed body', () => {
    const root = 'XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg='
    const bodies: [string, string][] = [
      // The invalid bodies of transparency-dev/formats log/checkpoint_test.go (TestUnmarshalLogState).
      ['insufficient lines', 'Head\n9944\n'],
      ['empty header', `\n9944\n${root}\n`],
      ['missing newline on root hash', `Log\n123\n${root}`],
      ['size not a number', `Log\nbananas\n${root}\n`],
      ['negative size', `Log\n-34\n${root}\n`],
      ['size too large', `Log\n3438945738945739845734895735\n${root}\n`],
      ['root not base64', "Log\n123\nThisIsn'tBase64\n"],
      // Stricter than that parser, as the tlog-checkpoint spec asks.
      ['leading zero', `Log\n0123\n${root}\n`],
      ['plus sign', `Log\n+123\n${root}\n`],
      ['size beyond 2^53 − 1', `Log\n9007199254740992\n${root}\n`],
      ['root not 32 bytes', 'Log\n123\nYmFuYW5hcw==\n'],
      ['unpadded root', `Log\n123\n${root.slice(0, -1)}\n`],
      ['url-safe root', `Log\n123\n${root.replace('+', '-').replace('/', '_')}\n`],
      ['empty extension line', `Log\n123\n${root}\n\n`],
      ['missing final newline after an extension', `Log\n123\n${root}\next`],
      ['empty text', ''],
    ]
    for (const [what, body] of bodies) assert.throws(() => parseCheckpoint(body), CheckpointError, what)
  })

  it('reads a size of 0 and the largest safe size', () => {
    const root = 'XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg='
    assert.equal(parseCheckpoint(`Log\n0\n${root}\n`).treeSize, 0)
    assert.equal(parseCheckpoint(`Log\n9007199254740991\n${root}\n`).treeSize, Number.MAX_SAFE_INTEGER)
  })
})

describe('openCheckpoint', () => {
  const log = parseGoSignerKey(formatsKeys['logSK']!)
  const logKey = parseVerifierKey(formatsKeys['logVK']!)
  const witness = parseGoSignerKey(formatsKeys['known1SK']!)
  const witnessKey = parseVerifierKey(formatsKeys['known1VK']!)
  const body = formatCheckpoint({ origin: 'Log', treeSize: 8, rootHash: root8 })

  it("opens a checkpoint signed by the log's key, named after its origin", () => {
    const opened = openCheckpoint(signNote(body, log), logKey)
    assert.equal(opened.checkpoint.treeSize, 8)
    assert.equal(hex(opened.checkpoint.rootHash), hex(root8))
    assert.deepEqual(
      opened.note.verified.map((s) => s.name),
      ['Log'],
    )
  })

  it("verifies a witness's cosignature too, and ignores signatures from unknown keys", () => {
    const cosigned = signNote(body, log) + signNote(body, witness).slice(body.length + 1)
    assert.equal(verifyNote(cosigned, [logKey, witnessKey]).verified.length, 2)
    assert.equal(openCheckpoint(cosigned, logKey, [witnessKey]).note.verified.length, 2)
    assert.deepEqual(
      openCheckpoint(cosigned, logKey).note.unverified.map((s) => s.name),
      ['Known'],
    )
  })

  it("refuses a checkpoint the log's key did not sign", () => {
    assert.throws(() => openCheckpoint(signNote(body, witness), logKey, [witnessKey]), CheckpointError)
    assert.throws(() => openCheckpoint(signNote(body, witness), logKey), NoteError)
  })

  it('refuses a checkpoint whose origin is not the key name', () => {
    const other = formatCheckpoint({ origin: 'Other', treeSize: 8, rootHash: root8 })
    assert.throws(() => openCheckpoint(signNote(other, log), logKey), /origin/)
  })

  it('refuses a signed body that is not a checkpoint', () => {
    const note = signNote("if this is a valid checkpoint then I'll eat my hat\n", log)
    assert.throws(() => openCheckpoint(note, logKey), CheckpointError)
  })

  it('refuses a checkpoint whose size or root was changed after signing', () => {
    const signed = signNote(body, log)
    assert.throws(() => openCheckpoint(signed.replace('\n8\n', '\n9\n'), logKey), NoteError)
    assert.throws(() => openCheckpoint(signed.replace('Xcna', 'Xcnb'), logKey), NoteError)
  })

  it('signs under the key ID of the key named after the origin', () => {
    assert.equal(noteVerifier('Log', log.privateKey).keyId, logKey.keyId)
  })
})
