import assert from 'node:assert/strict'
import { generateKeyPairSync, type KeyObject, randomUUID } from 'node:crypto'
import { after, describe, it } from 'node:test'
import {
  canonicalJson,
  encodeBase64,
  formatCheckpoint,
  formatVerifierKey,
  inclusionProof,
  leafHash,
  noteVerifier,
  rootFromLeafHashes,
  signNote,
} from '@arbiter/transparency'
import fc from 'fast-check'
import {
  ArbiterError,
  ArbiterVerificationError,
  isEvaluationPending,
  type ManifestInclusionProof,
  type VerificationCheck,
  verifyEnvelope,
  verifyInclusion,
} from '../src/index.ts'
import { EVIDENCE, startLiveArbiter } from './helpers/live.ts'

const ORIGIN = 'arbiter.local/log/6f0c2a8e-4d1b-4c55-9a0e-0d7f5d3b9c21'
const utf8 = new TextEncoder()

interface TestLog {
  privateKey: KeyObject
  publicKey: KeyObject
  records: Record<string, unknown>[]
  leaves: Uint8Array[]
  /** The signed note of the tree over the first `size` records. */
  note(size?: number, origin?: string, key?: KeyObject): string
  /** What `GET /v1/manifests/{id}/inclusion` answers for record `seq` against a tree of `size`. */
  proof(seq: number, size?: number): ManifestInclusionProof
}

/** An audit log of `size` records (every third one a `manifest.issued`), built with the service's own tree code. */
function buildLog(size: number): TestLog {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519')
  const records = Array.from({ length: size }, (_, i) => ({
    seq: i + 1,
    at: new Date(Date.UTC(2026, 10, 29, 18, 0, i)).toISOString(),
    kind: i % 3 === 2 ? 'manifest.issued' : 'interpretation.recorded',
    actor: 'key-1',
    outcome_id: randomUUID(),
    manifest_id: i % 3 === 2 ? randomUUID() : null,
    subagent_id: 'refund-agent',
    orchestrator_id: 'orch-a',
    verdict: i % 3 === 2 ? 'AGREED' : null,
    data:
      i % 3 === 2 ? { manifest_digest: `sha256:${String(i).padStart(64, '0')}`, directive: 'PROCEED' } : {},
    prev_hash: `sha256:${'0'.repeat(64)}`,
    hash: `sha256:${String(i + 1).padStart(64, 'a')}`,
  }))
  const leaves = records.map((record) => leafHash(utf8.encode(canonicalJson(record))))
  const note = (treeSize = size, origin = ORIGIN, key = privateKey) =>
    signNote(
      formatCheckpoint({ origin, treeSize, rootHash: rootFromLeafHashes(leaves.slice(0, treeSize)) }),
      {
        name: origin,
        privateKey: key,
      },
    )
  const proof = (seq: number, treeSize = size): ManifestInclusionProof => {
    const record = records[seq - 1]!
    const rootHash = rootFromLeafHashes(leaves.slice(0, treeSize))
    return {
      manifest_id: String(record.manifest_id),
      record,
      leaf_index: seq - 1,
      tree_size: treeSize,
      leaf_hash: encodeBase64(leaves[seq - 1]!),
      proof: inclusionProof(seq - 1, leaves.slice(0, treeSize)).map(encodeBase64),
      checkpoint: {
        checkpoint: { origin: ORIGIN, tree_size: treeSize, root_hash: encodeBase64(rootHash) },
        note: note(treeSize),
        jws: 'not checked here',
      },
    }
  }
  return { privateKey, publicKey, records, leaves, note, proof }
}

function refusal(run: () => unknown, check: VerificationCheck): void {
  assert.throws(run, (err: unknown) => {
    assert.ok(err instanceof ArbiterVerificationError, `expected a refusal, got ${String(err)}`)
    assert.equal(err.check, check, err.message)
    return true
  })
}

const log = buildLog(11)
const SEQ = 6 // a manifest.issued record

describe('verifyInclusion', () => {
  it('proves a manifest.issued record against the signed checkpoint, with the key as KeyObject, JWK or verifier key', () => {
    const jwk = log.publicKey.export({ format: 'jwk' })
    const vkey = formatVerifierKey(noteVerifier(ORIGIN, log.publicKey))
    for (const key of [log.publicKey, jwk as { kty: string; crv: string; x: string }, vkey]) {
      const verified = verifyInclusion(log.proof(SEQ), log.note(), key)
      assert.equal(verified.seq, SEQ)
      assert.equal(verified.leafIndex, SEQ - 1)
      assert.equal(verified.treeSize, 11)
      assert.equal(verified.origin, ORIGIN)
      assert.equal(verified.manifestId, log.records[SEQ - 1]!.manifest_id)
      assert.equal(verified.rootHash, encodeBase64(rootFromLeafHashes(log.leaves)))
    }
  })

  it('proves every manifest record at every tree size that contains it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 11 }), fc.integer({ min: 0, max: 10 }), (a, b) => {
        const seq = Math.min(a, b + 1) // seq ≤ size
        const size = Math.max(a, b + 1)
        fc.pre(log.records[seq - 1]!.kind === 'manifest.issued')
        assert.equal(verifyInclusion(log.proof(seq, size), log.note(size), log.publicKey).treeSize, size)
      }),
    )
  })

  it('binds the record to an envelope by manifest digest when asked', () => {
    const digest = (log.records[SEQ - 1]!.data as { manifest_digest: string }).manifest_digest
    verifyInclusion(log.proof(SEQ), log.note(), log.publicKey, { manifestDigest: digest })
    refusal(
      () =>
        verifyInclusion(log.proof(SEQ), log.note(), log.publicKey, {
          manifestDigest: `sha256:${'f'.repeat(64)}`,
        }),
      'record',
    )
  })

  it('refuses a note signed by another key, or for another origin than the one insisted on', () => {
    const other = generateKeyPairSync('ed25519').privateKey
    refusal(() => verifyInclusion(log.proof(SEQ), log.note(11, ORIGIN, other), log.publicKey), 'note')
    refusal(
      () => verifyInclusion(log.proof(SEQ), log.note(), log.publicKey, { origin: 'another.log/x' }),
      'note',
    )
    const otherVkey = formatVerifierKey(noteVerifier('another.log/x', log.publicKey))
    refusal(() => verifyInclusion(log.proof(SEQ), log.note(), otherVkey), 'note')
  })

  it('refuses a note whose text was altered after signing', () => {
    const note = log.note()
    const [origin, size, ...rest] = note.split('\n')
    refusal(
      () =>
        verifyInclusion(
          log.proof(SEQ),
          [origin, String(Number(size) + 1), ...rest].join('\n'),
          log.publicKey,
        ),
      'note',
    )
  })

  it('refuses a proof for another tree size than the checkpoint', () => {
    refusal(() => verifyInclusion(log.proof(SEQ, 10), log.note(11), log.publicKey), 'tree_size')
  })

  it('refuses an answer whose checkpoint object contradicts the signed note', () => {
    const proof = log.proof(SEQ)
    const tampered = {
      ...proof,
      checkpoint: {
        checkpoint: { origin: ORIGIN, tree_size: 11, root_hash: encodeBase64(new Uint8Array(32)) },
      },
    }
    refusal(() => verifyInclusion(tampered, log.note(), log.publicKey), 'checkpoint')
  })

  it('refuses a record that was changed (its leaf hash no longer matches)', () => {
    const proof = log.proof(SEQ)
    const record = { ...proof.record, verdict: 'CRITERIA_DIFFER' }
    refusal(() => verifyInclusion({ ...proof, record }, log.note(), log.publicKey), 'leaf_hash')
  })

  it('refuses a record and leaf hash changed together (the path no longer leads to the root)', () => {
    const proof = log.proof(SEQ)
    const record = { ...proof.record, verdict: 'CRITERIA_DIFFER' }
    const leaf = encodeBase64(leafHash(utf8.encode(canonicalJson(record))))
    refusal(() => verifyInclusion({ ...proof, record, leaf_hash: leaf }, log.note(), log.publicKey), 'proof')
  })

  it('refuses any proof with one bit flipped', () => {
    const proof = log.proof(SEQ)
    fc.assert(
      fc.property(fc.nat({ max: proof.proof.length - 1 }), fc.nat({ max: 255 }), (i, bit) => {
        const bytes = Buffer.from(proof.proof[i]!, 'base64')
        bytes[bit >> 3]! ^= 1 << (bit & 7)
        const flipped = proof.proof.map((hash, j) => (j === i ? bytes.toString('base64') : hash))
        refusal(() => verifyInclusion({ ...proof, proof: flipped }, log.note(), log.publicKey), 'proof')
      }),
    )
  })

  it('refuses a proof with a hash missing or added', () => {
    const proof = log.proof(SEQ)
    refusal(
      () => verifyInclusion({ ...proof, proof: proof.proof.slice(1) }, log.note(), log.publicKey),
      'proof',
    )
    const longer = [...proof.proof, encodeBase64(new Uint8Array(32))]
    refusal(() => verifyInclusion({ ...proof, proof: longer }, log.note(), log.publicKey), 'proof')
  })

  it('refuses a record that is not the manifest.issued record at that leaf', () => {
    refusal(() => verifyInclusion(log.proof(SEQ - 1), log.note(), log.publicKey), 'record')
    const proof = log.proof(SEQ)
    refusal(
      () => verifyInclusion({ ...proof, manifest_id: randomUUID() }, log.note(), log.publicKey),
      'record',
    )
    refusal(() => verifyInclusion({ ...proof, leaf_index: SEQ }, log.note(), log.publicKey), 'record')
  })

  it('refuses malformed answers, naming the member', () => {
    const proof = log.proof(SEQ)
    const cases: [unknown, RegExp][] = [
      [null, /not a JSON object/],
      [{ ...proof, record: 'x' }, /record/],
      [{ ...proof, leaf_index: -1 }, /leaf_index/],
      [{ ...proof, tree_size: 0 }, /tree_size/],
      [{ ...proof, leaf_index: 11 }, /outside a tree of size 11/],
      [{ ...proof, leaf_hash: 'not base64!' }, /leaf_hash/],
      [{ ...proof, proof: 'x' }, /proof is not an array/],
      [{ ...proof, proof: [42] }, /proof\[0\]/],
    ]
    for (const [input, message] of cases) {
      assert.throws(
        () => verifyInclusion(input as ManifestInclusionProof, log.note(), log.publicKey),
        (err: unknown) =>
          err instanceof ArbiterVerificationError && err.check === 'malformed' && message.test(err.message),
      )
    }
  })

  it('refuses a public key that is not Ed25519', () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    refusal(() => verifyInclusion(log.proof(SEQ), log.note(), publicKey), 'key')
    refusal(() => verifyInclusion(log.proof(SEQ), log.note(), { kty: 'oct' }), 'key')
  })
})

describe('verifyInclusion against a live Arbiter', async () => {
  const live = await startLiveArbiter({ after })

  it('proves that a manifest the service issued was logged, and that the log only grew since', async () => {
    const key = await live.key('orchestrator', ['orch-a'])
    const client = live.client(key)
    const outcome = await client.outcomes.create({ subagent_id: 'logged', run_id: 'r1', evidence: EVIDENCE })
    await client.outcomes.interpret(outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
      success_criterion: { require: [] },
    })
    const envelope = await client.outcomes.evaluate(outcome.outcome_id)
    assert.ok(!isEvaluationPending(envelope))
    const jwks = await client.jwks()
    const { kid } = await verifyEnvelope(envelope, jwks)
    const id = envelope.manifest.manifest_id
    const proof = await client.manifests.inclusion(id)
    const verified = verifyInclusion(proof, proof.checkpoint.note, jwks.keys.find((k) => k.kid === kid)!, {
      manifestDigest: envelope.manifest_digest,
    })
    assert.equal(verified.manifestId, id)

    // The log's own proofs, through the client: the record is in the latest checkpoint's tree, which extends
    // the tree the manifest's proof was made against.
    const latest = await client.audit.checkpoint()
    const size = String(latest.checkpoint.tree_size)
    const inclusion = await client.audit.inclusionProof({ seq: String(proof.record.seq), tree_size: size })
    assert.equal(inclusion.tree_size, latest.checkpoint.tree_size)
    const consistency = await client.audit.consistencyProof({
      from_size: String(proof.checkpoint.checkpoint.tree_size),
      to_size: size,
    })
    assert.equal(consistency.to_size, latest.checkpoint.tree_size)
    await assert.rejects(client.audit.inclusionProof({ seq: '0' }), (err: unknown) => {
      assert.ok(err instanceof ArbiterError)
      assert.equal(err.status, 400)
      return true
    })
  })
})
