import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import canonicalize from 'canonicalize'
import fc from 'fast-check'
import {
  type AuditRecord,
  canonicalAuditRecord,
  GENESIS_HASH,
  type UnsequencedAuditRecord,
} from '../../../src/audit-log/core/records.ts'
import {
  auditLeafHash,
  extendTree,
  keptRightEdge,
  sequenceEntries,
} from '../../../src/audit-log/core/sequence-batch.ts'
import {
  compactRangeRoot,
  EMPTY_COMPACT_RANGE,
  nodeKey,
  rootFromLeafHashes,
  rootFromNodes,
  rootNodes,
} from '../../../src/audit-log/core/transparency.ts'

/** The record's hash and leaf as a client computes them from the published format, with no service code. */
function clientRecordHash(record: Omit<AuditRecord, 'hash'>): string {
  return `sha256:${createHash('sha256')
    .update(record.prev_hash + canonicalize(record)!)
    .digest('hex')}`
}
function clientLeafHash(record: AuditRecord): Buffer {
  return createHash('sha256')
    .update(Buffer.from([0]))
    .update(canonicalize(record)!, 'utf8')
    .digest()
}

const entry = (n: number): UnsequencedAuditRecord => ({
  at: new Date(1_800_000_000_000 + n).toISOString(),
  kind: n % 3 === 0 ? 'manifest.issued' : 'outcome.created',
  actor: 'system',
  outcome_id: null,
  manifest_id: n % 3 === 0 ? `00000000-0000-4000-8000-${String(n).padStart(12, '0')}` : null,
  subagent_id: 'agent',
  orchestrator_id: null,
  verdict: null,
  data: { n, text: 'é "quoted" ☃' },
})

const jsonEntry: fc.Arbitrary<UnsequencedAuditRecord> = fc.record({
  at: fc
    .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
    .map((d) => d.toISOString()),
  kind: fc.constantFrom('outcome.created', 'manifest.issued', 'key.created'),
  actor: fc.string(),
  outcome_id: fc.option(fc.uuid(), { nil: null }),
  manifest_id: fc.option(fc.uuid(), { nil: null }),
  subagent_id: fc.option(fc.string(), { nil: null }),
  orchestrator_id: fc.option(fc.string(), { nil: null }),
  verdict: fc.option(fc.string(), { nil: null }),
  data: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<never>),
})

/** Sequences entries in the given batch sizes, starting from the empty log. */
function sequenceInBatches(entries: UnsequencedAuditRecord[], sizes: number[]) {
  let head = { seq: 0, hash: GENESIS_HASH as string, treeSize: 0 }
  let range = EMPTY_COMPACT_RANGE
  const records: AuditRecord[] = []
  const nodes = new Map<string, Uint8Array>()
  let at = 0
  for (const size of sizes) {
    const batch = sequenceEntries(head, range, entries.slice(at, at + size))
    at += size
    for (const { canonical, ...record } of batch.records) {
      const { hash: _hash, ...unhashed } = record
      assert.equal(canonical, canonicalAuditRecord(unhashed), 'the text stored beside the record is its JCS')
      records.push(record)
    }
    for (const node of batch.nodes) {
      assert.ok(!nodes.has(nodeKey(node)), `node ${nodeKey(node)} is written once`)
      nodes.set(nodeKey(node), node.hash)
    }
    head = batch.head
    range = batch.range
  }
  return { head, range, records, nodes }
}

describe('sequenceEntries', () => {
  it('gives consecutive seqs from 1, chains each record to the one before, as a client recomputes them', () => {
    const { records, head } = sequenceInBatches(
      Array.from({ length: 10 }, (_, i) => entry(i + 1)),
      [3, 1, 6],
    )
    assert.deepEqual(
      records.map((r) => r.seq),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    )
    let prev = GENESIS_HASH as string
    for (const record of records) {
      const { hash, ...rest } = record
      assert.equal(record.prev_hash, prev)
      assert.equal(hash, clientRecordHash(rest))
      prev = hash
    }
    assert.deepEqual(head, { seq: 10, hash: prev, treeSize: 10 })
  })

  it('makes leaf seq the RFC 9162 leaf at index seq − 1, over JCS of the whole record', () => {
    const { records, nodes, range } = sequenceInBatches(
      Array.from({ length: 13 }, (_, i) => entry(i + 1)),
      [5, 8],
    )
    for (const record of records) {
      assert.deepEqual(Buffer.from(nodes.get(`0:${record.seq - 1}`)!), clientLeafHash(record))
      assert.deepEqual(Buffer.from(auditLeafHash(record)), clientLeafHash(record))
    }
    const reference = rootFromLeafHashes(records.map(clientLeafHash))
    assert.deepEqual(Buffer.from(compactRangeRoot(range)), Buffer.from(reference))
  })

  it('stores every perfect subtree, so the root at every size is a handful of stored nodes', () => {
    fc.assert(
      fc.property(
        fc.array(jsonEntry, { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 40 }),
        (entries, rawSizes) => {
          // Batch sizes that add up to the number of entries, whatever fast-check drew.
          const sizes: number[] = []
          let left = entries.length
          for (const size of rawSizes) {
            if (left === 0) break
            sizes.push(Math.min(size, left))
            left -= Math.min(size, left)
          }
          if (left > 0) sizes.push(left)
          const { records, nodes } = sequenceInBatches(entries, sizes)
          const leaves = records.map(clientLeafHash)
          for (let size = 1; size <= records.length; size++) {
            const fromNodes = rootFromNodes(size, nodes)
            assert.deepEqual(Buffer.from(fromNodes), Buffer.from(rootFromLeafHashes(leaves.slice(0, size))))
            for (const id of rootNodes(size)) assert.ok(nodes.has(nodeKey(id)))
          }
        },
      ),
      { numRuns: 60 },
    )
  })

  it('refuses to sequence while the tree lags the chain', () => {
    assert.throws(
      () => sequenceEntries({ seq: 3, hash: GENESIS_HASH, treeSize: 2 }, EMPTY_COMPACT_RANGE, [entry(1)]),
      /tree must hold every record/,
    )
  })
})

describe('extendTree', () => {
  it('adds records already in the chain as the next leaves, with the same nodes as sequencing them did', () => {
    const { records, nodes } = sequenceInBatches(
      Array.from({ length: 11 }, (_, i) => entry(i + 1)),
      [11],
    )
    let range = EMPTY_COMPACT_RANGE
    const rebuilt = new Map<string, Uint8Array>()
    for (const part of [records.slice(0, 4), records.slice(4, 5), records.slice(5)]) {
      const extended = extendTree(range, part)
      for (const node of extended.nodes) rebuilt.set(nodeKey(node), node.hash)
      range = extended.range
    }
    assert.deepEqual(rebuilt, nodes)
  })

  it('refuses records that are not the next leaves', () => {
    const { records } = sequenceInBatches([entry(1), entry(2)], [2])
    assert.throws(() => extendTree(EMPTY_COMPACT_RANGE, [records[1]!]), /not leaf 1/)
  })
})

describe('keptRightEdge', () => {
  const range = { size: 5, hashes: [new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)] }
  const head = { seq: 5, hash: `sha256:${'a'.repeat(64)}`, treeSize: 5 }

  it('keeps the edge only for the same last record and tree size', () => {
    assert.equal(keptRightEdge({ head, range }, { ...head }), range)
    assert.equal(keptRightEdge(null, head), undefined)
    // Another record at the same seq (a rolled-back batch, then another holder placed other entries there).
    assert.equal(keptRightEdge({ head, range }, { ...head, hash: `sha256:${'b'.repeat(64)}` }), undefined)
    assert.equal(keptRightEdge({ head, range }, { ...head, seq: 6, treeSize: 6 }), undefined)
    // The same records, the tree not yet over all of them (a backfill in progress).
    assert.equal(keptRightEdge({ head, range }, { ...head, treeSize: 4 }), undefined)
  })
})
