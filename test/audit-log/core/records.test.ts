import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  type AuditRecord,
  ChainVerifier,
  canonicalAuditRecord,
  canonicalAuditRecordWithHash,
  canonicalTextWithHash,
  GENESIS_HASH,
  hashAuditRecord,
  hashedAuditFields,
  sealAuditRecord,
  splitAtHash,
} from '../../../src/audit-log/core/records.ts'
import { registeredCaseSchemas } from '../../../src/cases/registry.ts'
import { canonicalJson, type JsonValue, sha256 } from '../../../src/domain/shared/canonical-json.ts'
import { systemEntry } from '../../helpers/log-client.ts'

// Strings that look like the key `hash` is spliced before, often enough to matter.
const text = fc.oneof(fc.string(), fc.constantFrom('kind', ',"kind":', '","kind":"x', '\u2028é😀'))
const nullableText = fc.option(text, { nil: null })
const record = fc.record({
  seq: fc.integer({ min: 1, max: 2 ** 40 }),
  at: fc
    .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
    .map((d) => d.toISOString()),
  kind: fc.constantFrom(...registeredCaseSchemas().words.auditKinds),
  actor: text,
  outcome_id: nullableText,
  manifest_id: nullableText,
  subagent_id: nullableText,
  orchestrator_id: nullableText,
  verdict: nullableText,
  data: fc.dictionary(text, fc.oneof(text, fc.jsonValue()) as fc.Arbitrary<JsonValue>),
  prev_hash: fc.string(),
})

function chain(n: number): AuditRecord[] {
  const records: AuditRecord[] = []
  let prev: string = GENESIS_HASH
  for (let seq = 1; seq <= n; seq++) {
    const unhashed = {
      ...systemEntry({ n: seq }, new Date(1_800_000_000_000 + seq).toISOString()),
      seq,
      prev_hash: prev,
    }
    const hash = hashAuditRecord(unhashed)
    records.push({ ...unhashed, hash })
    prev = hash
  }
  return records
}

describe('audit chain hashing', () => {
  it('serializes a record exactly as RFC 8785 does', () => {
    fc.assert(
      fc.property(record, (r) => {
        assert.equal(canonicalAuditRecord(r), canonicalJson(hashedAuditFields(r)))
      }),
      { numRuns: 500 },
    )
  })

  it('seals a record once: its canonical text, its hash, and from the two the text of the whole record', () => {
    fc.assert(
      fc.property(record, (r) => {
        const sealed = sealAuditRecord(r)
        assert.equal(sealed.canonical, canonicalAuditRecord(r))
        assert.equal(sealed.hash, hashAuditRecord(r))
        assert.equal(
          canonicalTextWithHash(sealed.canonical, sealed.hash),
          canonicalAuditRecordWithHash(sealed),
        )
        // Split right after data's value: the head is the canonical text's up to `"kind":`, exclusive.
        const [head, tail] = splitAtHash(sealed.canonical)!
        assert.equal(head + tail, sealed.canonical)
        assert.ok(tail.startsWith(`"kind":${JSON.stringify(r.kind)},"manifest_id":`), tail)
      }),
      { numRuns: 500 },
    )
    assert.equal(splitAtHash('{"data":{}}'), null)
    assert.throws(() => canonicalTextWithHash('{}', 'sha256:00'), /not the canonical text/)
  })

  it('hashes sha256(prev_hash + JCS(record without hash))', () => {
    const [first] = chain(1)
    const { hash, ...rest } = first!
    assert.equal(hash, sha256(GENESIS_HASH + canonicalJson(rest)))
  })

  it('finds the first bad record: an edit, a gap, a broken link', () => {
    const good = chain(6)
    const verify = (records: AuditRecord[]) => {
      const verifier = new ChainVerifier(null, true)
      for (const r of records) if (!verifier.push(r)) break
      return verifier.result.firstBadSeq
    }
    assert.equal(verify(good), null)
    assert.equal(verify(good.map((r) => (r.seq === 4 ? { ...r, actor: 'mallory' } : r))), 4)
    assert.equal(verify(good.filter((r) => r.seq !== 3)), 3, 'a missing record is reported at its own seq')
    assert.equal(verify(good.map((r) => (r.seq === 5 ? { ...r, prev_hash: GENESIS_HASH } : r))), 5)
  })
})
