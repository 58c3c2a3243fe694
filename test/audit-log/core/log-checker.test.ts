import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  type CheckpointClaim,
  checkedRecord,
  checkpointCheck,
  LogChecker,
  lookupIn,
  storedRecord,
} from '../../../src/audit-log/core/log-checker.ts'
import { type AuditRecord, canonicalAuditRecord, GENESIS_HASH } from '../../../src/audit-log/core/records.ts'
import { recordLeafHash, sequenceEntries } from '../../../src/audit-log/core/sequence-batch.ts'
import {
  compactRangeFromNodes,
  compactRangeRoot,
  EMPTY_COMPACT_RANGE,
  leafHash,
  rootFromNodes,
  rootNodes,
} from '../../../src/audit-log/core/transparency.ts'
import {
  CHUNK_LEVEL,
  CHUNK_SIZE,
  ChunkChecker,
  type ChunkResult,
  mergeChunk,
  startMerge,
} from '../../../src/audit-log/core/verify-chunks.ts'
import { systemEntry } from '../../helpers/log-client.ts'

function log(n: number) {
  const batch = sequenceEntries(
    { seq: 0, hash: GENESIS_HASH, treeSize: 0 },
    EMPTY_COMPACT_RANGE,
    Array.from({ length: n }, (_, i) => systemEntry({ i }, new Date(1_800_000_000_000 + i).toISOString())),
  )
  const nodes = new Map(batch.nodes.map((node) => [`${node.level}:${node.index}`, node.hash]))
  return { records: batch.records, nodes }
}

function claimAt(records: AuditRecord[], nodes: Map<string, Uint8Array>, size: number): CheckpointClaim {
  return {
    treeSize: size,
    rootHash: rootFromNodes(size, nodes),
    headHash: records[size - 1]!.hash,
    signaturesOk: true,
  }
}

/** Runs the checker over the whole log in slices of the given size. */
function check(
  records: AuditRecord[],
  nodes: Map<string, Uint8Array>,
  claims: CheckpointClaim[] = [],
  slice = 7,
) {
  const checker = new LogChecker(null, EMPTY_COMPACT_RANGE)
  const bySize = new Map(claims.map((c) => [c.treeSize, checkpointCheck(c)]))
  for (let at = 0; at < records.length; at += slice) {
    if (
      !checker.push(
        records.slice(at, at + slice).map((r) => checkedRecord(r)),
        lookupIn(nodes),
        bySize,
      )
    )
      break
  }
  return checker.result
}

const flip = (hash: Uint8Array) => Uint8Array.from(hash, (byte, i) => (i === 0 ? byte ^ 1 : byte))

describe('recordLeafHash', () => {
  it('is the RFC 9162 leaf hash of the UTF-8 text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (text) => {
        assert.deepEqual(
          Buffer.from(recordLeafHash(text)),
          Buffer.from(leafHash(new TextEncoder().encode(text))),
        )
      }),
    )
  })
})

describe('storedRecord', () => {
  const record: AuditRecord = {
    seq: 7,
    at: '2026-11-30T12:00:00.000Z',
    kind: 'manifest.issued',
    actor: 'k-1',
    outcome_id: '0b5e1c8e-8d7a-4f55-9a31-2f4b1e0b7c11',
    manifest_id: null,
    subagent_id: 'sa "one"',
    orchestrator_id: ',"kind":"x"',
    verdict: 'failure',
    // "kind" inside data, also after a comma: the split is at the record's own key.
    data: { hash: 'x', kind: 'nested', list: [1, 'two', { z: null, a: true }], é: '\u2028', s: ',"kind":' },
    prev_hash: GENESIS_HASH,
    hash: 'sha256:00',
  }
  const stored = (r: AuditRecord, text = canonicalAuditRecord(r)) =>
    storedRecord(r.seq, r.prev_hash, r.hash, text)

  it('splits the stored text where the columns rebuild it', () => {
    assert.deepEqual(stored(record), checkedRecord(record))
  })

  it('rebuilds a record from its columns and holds a stored text to it', () => {
    const text = canonicalAuditRecord(record)
    assert.deepEqual(checkedRecord(record, text), checkedRecord(record))
    assert.notEqual(checkedRecord(record).parts, null)
    assert.equal(checkedRecord(record, text.replace('"seq":7', '"seq":7 ')).parts, null)
    assert.equal(checkedRecord({ ...record, verdict: 'success' }, text).parts, null)
  })

  it('refuses a text that has no kind key', () => {
    for (const broken of ['', '{}', '{"kind":"manifest.issued"}']) {
      assert.equal(stored(record, broken).parts, null, broken)
    }
  })

  it('finds a record whose stored text was edited, and only there', () => {
    const { records, nodes } = log(12)
    const checker = new LogChecker(null, EMPTY_COMPACT_RANGE)
    assert.ok(
      checker.push(
        records.map((r) => stored(r)),
        lookupIn(nodes),
        new Map(),
      ),
    )
    for (const edit of [
      (text: string) => text.replace('{"i":5}', '{"i":6}'),
      (text: string) => text.replace('{"i":5}', '{"i": 5}'),
      (text: string) => text.replace(',"kind":', ',"kind": '),
      (text: string) => text.replace(',"kind":', '"kind":'),
    ]) {
      const edited = records.map((r, i) => (i === 5 ? stored(r, edit(canonicalAuditRecord(r))) : stored(r)))
      const again = new LogChecker(null, EMPTY_COMPACT_RANGE)
      assert.equal(again.push(edited, lookupIn(nodes), new Map()), false, edit.toString())
      assert.equal(again.result.firstBadSeq, 6)
    }
  })
})

describe('LogChecker', () => {
  it('accepts an untouched log and recomputes its root, checking every checkpoint', () => {
    const { records, nodes } = log(37)
    const claims = [1, 8, 20, 37].map((size) => claimAt(records, nodes, size))
    const result = check(records, nodes, claims)
    assert.equal(result.firstBadSeq, null)
    assert.equal(result.checked, 37)
    assert.equal(result.checkpointsChecked, 4)
    assert.deepEqual(result.head, { seq: 37, hash: records[36]!.hash })
    assert.deepEqual(compactRangeRoot(result.range), rootFromNodes(37, nodes))
  })

  it('finds the same first bad seq whatever the slice size', () => {
    const { records, nodes } = log(40)
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 50 }), (bad, slice) => {
        const tampered = records.map((r) => (r.seq === bad ? { ...r, actor: 'mallory' } : r))
        assert.equal(check(tampered, nodes, [], slice).firstBadSeq, bad)
      }),
    )
  })

  it('names the seq that completed a tampered or missing node', () => {
    const { records, nodes } = log(20)
    // Level 2, index 1 covers leaves 4..7 (seq 5..8): it is complete once seq 8 is appended.
    const tampered = new Map(nodes)
    tampered.set('2:1', flip(nodes.get('2:1')!))
    const result = check(records, tampered)
    assert.equal(result.firstBadSeq, 8)
    assert.deepEqual(result.head, { seq: 7, hash: records[6]!.hash }, 'everything before it checked out')
    assert.equal(result.checked, 7)
    assert.deepEqual(compactRangeRoot(result.range), rootFromNodes(7, nodes))
    const leafTampered = new Map(nodes)
    leafTampered.set('0:12', flip(nodes.get('0:12')!))
    assert.equal(check(records, leafTampered).firstBadSeq, 13)
    const missing = new Map(nodes)
    missing.delete('4:0')
    assert.equal(check(records, missing).firstBadSeq, 16)
  })

  it('names the size of a checkpoint whose root, head or signatures do not hold', () => {
    const { records, nodes } = log(20)
    const good = claimAt(records, nodes, 12)
    for (const bad of [
      { ...good, rootHash: flip(good.rootHash) },
      { ...good, headHash: records[10]!.hash },
      { ...good, signaturesOk: false },
    ]) {
      const result = check(records, nodes, [claimAt(records, nodes, 5), bad])
      assert.equal(result.firstBadSeq, 12)
      assert.equal(result.checkpointsChecked, 2)
      assert.equal(result.head?.seq, 11)
      assert.equal(result.range.size, 11)
    }
  })

  it('reports a break in the chain before a later bad node', () => {
    const { records, nodes } = log(20)
    const tamperedNodes = new Map(nodes)
    tamperedNodes.set('0:15', flip(nodes.get('0:15')!))
    const tampered = records.map((r) => (r.seq === 9 ? { ...r, data: { forged: true } } : r))
    assert.equal(check(tampered, tamperedNodes).firstBadSeq, 9)
  })

  it('starts mid-log from the stored tree and the record before', () => {
    const { records, nodes } = log(30)
    const range = compactRangeFromNodes(
      10,
      new Map(rootNodes(10).map((id) => [`${id.level}:${id.index}`, nodes.get(`${id.level}:${id.index}`)!])),
    )
    const checker = new LogChecker({ seq: 10, hash: records[9]!.hash }, range)
    assert.ok(
      checker.push(
        records.slice(10).map((r) => checkedRecord(r)),
        lookupIn(nodes),
        new Map([[30, checkpointCheck(claimAt(records, nodes, 30))]]),
      ),
    )
    assert.equal(checker.result.checked, 20)
    assert.equal(checker.result.firstBadSeq, null)
  })

  it('reports the same, record by record with the tree checked at any points, as slice by slice', () => {
    const { records, nodes } = log(40)
    const claims = [9, 24, 40].map((size) => claimAt(records, nodes, size))
    const bySize = new Map(claims.map((c) => [c.treeSize, checkpointCheck(c)]))
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.constantFrom('record', 'node', 'checkpoint', 'gap', 'none'),
        fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 6 }),
        (at, damage, flushes) => {
          const tamperedNodes = new Map(nodes)
          if (damage === 'node') tamperedNodes.set(`0:${at - 1}`, flip(nodes.get(`0:${at - 1}`)!))
          const claimsNow = new Map(bySize)
          if (damage === 'checkpoint') {
            claimsNow.set(24, checkpointCheck({ ...claimAt(records, nodes, 24), signaturesOk: false }))
          }
          const tampered = records
            .filter((r) => damage !== 'gap' || r.seq !== at)
            .map((r) => (damage === 'record' && r.seq === at ? { ...r, verdict: 'forged' } : r))
          const stepwise = new LogChecker(null, EMPTY_COMPACT_RANGE)
          for (const record of tampered) {
            stepwise.add(checkedRecord(record))
            if (flushes.includes(record.seq)) stepwise.flush(lookupIn(tamperedNodes), claimsNow)
          }
          stepwise.flush(lookupIn(tamperedNodes), claimsNow)
          const whole = new LogChecker(null, EMPTY_COMPACT_RANGE)
          whole.push(
            tampered.map((r) => checkedRecord(r)),
            lookupIn(tamperedNodes),
            claimsNow,
          )
          assert.deepEqual(stepwise.result, whole.result)
          // A missing last record leaves nothing out of place: finding it is the caller's (it knows the head).
          const expected = { record: at, node: at, gap: at === 40 ? null : at, checkpoint: 24, none: null }[
            damage
          ]
          assert.equal(whole.result.firstBadSeq, expected)
        },
      ),
    )
  })

  it('reports a gap at the first missing seq', () => {
    const { records, nodes } = log(10)
    const gapped = records.filter((r) => r.seq !== 6)
    assert.equal(check(gapped, nodes).firstBadSeq, 6)
  })
})

describe('checking the log in chunks', () => {
  const total = 2 * CHUNK_SIZE + 100
  const { records, nodes } = log(total)
  const lookup = lookupIn(nodes)
  // The stored nodes above the chunks' level, numbered as the tree over the chunks' roots numbers them.
  const upperNodes = new Map(
    [...nodes].flatMap(([key, hash]) => {
      const [level, index] = key.split(':').map(Number) as [number, number]
      return level > CHUNK_LEVEL ? [[`${level - CHUNK_LEVEL}:${index}`, hash] as const] : []
    }),
  )
  const tasks = [0, 1, 2].map((index) => {
    const from = index * CHUNK_SIZE + 1
    return {
      index,
      from,
      to: Math.min(total, from + CHUNK_SIZE - 1),
      checkpointSizes: [] as number[],
      storedText: true,
    }
  })
  const chunk = (task: (typeof tasks)[number], given: readonly AuditRecord[]): ChunkResult => {
    const checker = new ChunkChecker(task)
    for (const record of given) checker.add(checkedRecord(record))
    return checker.finish(lookup)
  }
  const inChunk = (task: (typeof tasks)[number]) => records.slice(task.from - 1, task.to)

  it('merges good chunks, in order, into the tree of the whole log', () => {
    const claim = claimAt(records, nodes, CHUNK_SIZE + 77)
    const state = startMerge()
    for (const task of tasks) {
      const withCheckpoint = { ...task, checkpointSizes: task.index === 1 ? [claim.treeSize] : [] }
      const result = chunk(withCheckpoint, inChunk(task))
      assert.equal(result.firstBadSeq, null)
      assert.equal(result.firstPrevHash, records[task.from - 2]?.hash ?? GENESIS_HASH)
      assert.ok(mergeChunk(state, result, upperNodes, new Map([[claim.treeSize, claim]])))
    }
    assert.equal(state.checked, total)
    assert.equal(state.checkpointsChecked, 1)
    assert.deepEqual(state.last, { seq: total, hash: records[total - 1]!.hash })
    assert.deepEqual(compactRangeRoot(state.range), rootFromNodes(total, nodes))
  })

  it('stops at a chunk with records missing at its end, or none, or that does not link to the one before', () => {
    const [first, second] = tasks as [(typeof tasks)[0], (typeof tasks)[0]]
    const short = chunk(second, inChunk(second).slice(0, -5))
    assert.equal(short.firstBadSeq, second.to - 4)
    assert.notEqual(chunk(second, []).firstBadSeq, null)
    const unlinked = chunk(
      second,
      inChunk(second).map((r, i) => (i === 0 ? { ...r, prev_hash: GENESIS_HASH } : r)),
    )
    for (const bad of [short, unlinked]) {
      const state = startMerge()
      assert.ok(mergeChunk(state, chunk(first, inChunk(first)), upperNodes, new Map()))
      assert.equal(mergeChunk(state, bad, upperNodes, new Map()), false)
      // The state still describes the log up to the last good chunk, where a record-by-record check resumes.
      assert.equal(state.checked, CHUNK_SIZE)
      assert.deepEqual(
        Buffer.from(compactRangeRoot(state.range)),
        Buffer.from(rootFromNodes(CHUNK_SIZE, nodes)),
      )
    }
  })

  it('finds a tampered record, leaf or node inside a chunk', () => {
    const [, second] = tasks as [(typeof tasks)[0], (typeof tasks)[0]]
    const forged = inChunk(second).map((r) => (r.seq === second.from + 9 ? { ...r, actor: 'mallory' } : r))
    assert.notEqual(chunk(second, forged).firstBadSeq, null)
    const tamperedLeaf = new Map(nodes)
    tamperedLeaf.set(`0:${second.from + 20}`, flip(nodes.get(`0:${second.from + 20}`)!))
    const checker = new ChunkChecker(second)
    for (const record of inChunk(second)) checker.add(checkedRecord(record))
    assert.notEqual(checker.finish(lookupIn(tamperedLeaf)).firstBadSeq, null)
  })
})
