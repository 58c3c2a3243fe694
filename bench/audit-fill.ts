import { randomBytes, randomUUID } from 'node:crypto'
import { setImmediate as yieldToIo } from 'node:timers/promises'
import pg from 'pg'
import {
  type AuditRecord,
  ChainVerifier,
  type SealedAuditRecord,
  sealAuditRecord,
} from '../src/audit-log/core/records.ts'
import { extendTree } from '../src/audit-log/core/sequence-batch.ts'
import { type CompactRange, compactRangeFromNodes, rootNodes } from '../src/audit-log/core/transparency.ts'
import { batchWriteOutcome, sequencedBatchWrite } from '../src/audit-log/store/batches.ts'
import { readNodes } from '../src/audit-log/store/merkle-nodes.ts'
import { AUDIT_COLUMNS, type AuditRow, auditRowToRecord } from '../src/audit-log/store/records.ts'
import { typeParsers } from '../src/db/pool.ts'
import { queryOne } from '../src/db/statement.ts'

/**
 * Synthetic audit history, written straight into `audit_records` so the audit endpoints can be measured at 1M
 * records without a day of traffic. It is a valid continuation of the chain: each record is hashed with the
 * service's own `sealAuditRecord`, made leaves of the tree with the sequencer's own `extendTree`, and written with
 * its `sequencedBatchWrite`, fenced on the head it extends like a sequencer batch, so it is safe while Arbiter
 * runs (its sequencer simply continues after the synthetic records).
 *
 * The records tell plausible stories: per outcome `outcome.created`, two or three `interpretation.recorded`,
 * `manifest.issued`, sometimes `escalation.opened` or `dissent.recorded` (~4.6 records, ~55% of them with an
 * orchestrator_id). orchestrator_id is spread over 1000 values, so `?orchestrator_id=X` matches ~0.06% of rows.
 */

// As in src/db/pool.ts: seq is int8, and the chain hashes it as a JSON number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number.parseInt(value, 10))

export const SYNTHETIC_ORCHESTRATORS = 1000
export const SYNTHETIC_SUBAGENTS = 40

export function syntheticOrchestratorId(index: number): string {
  return `orch-${String(index % SYNTHETIC_ORCHESTRATORS).padStart(4, '0')}`
}

type Entry = Omit<AuditRecord, 'seq' | 'at' | 'prev_hash' | 'hash'>

/** mulberry32: a small deterministic PRNG, so two runs write the same history. */
function prng(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

class Stories {
  private readonly random: () => number
  private readonly queue: Entry[] = []
  // Real hashes are random-looking 64-hex strings; a pool of them keeps generation cheap and sizes realistic.
  private readonly hashes = Array.from({ length: 4096 }, () => `sha256:${randomBytes(32).toString('hex')}`)
  private readonly actors = Array.from({ length: 24 }, () => randomUUID())
  private story = 0

  constructor(seed: number) {
    this.random = prng(seed)
  }

  next(): Entry {
    if (this.queue.length === 0) this.tell()
    return this.queue.shift()!
  }

  private pick<T>(values: readonly T[]): T {
    return values[Math.floor(this.random() * values.length)]!
  }

  private tell(): void {
    const story = ++this.story
    const outcomeId = randomUUID()
    const manifestId = randomUUID()
    const subagentId = `subagent-${String(story % SYNTHETIC_SUBAGENTS).padStart(2, '0')}`
    const actor = this.pick(this.actors)
    const count = this.random() < 0.3 ? 3 : 2
    const first = Math.floor(this.random() * SYNTHETIC_ORCHESTRATORS)
    const orchestrators = Array.from({ length: count }, (_, i) => syntheticOrchestratorId(first + i * 337))
    const evidenceHash = this.pick(this.hashes)
    const base = { actor, outcome_id: outcomeId, subagent_id: subagentId }
    this.queue.push({
      ...base,
      kind: 'outcome.created',
      manifest_id: null,
      orchestrator_id: null,
      verdict: null,
      data: {
        run_id: `run-${story}`,
        evidence_hash: evidenceHash,
        item_hashes: [this.pick(this.hashes), this.pick(this.hashes), this.pick(this.hashes)].sort(),
        expected_orchestrators: [...orchestrators].sort(),
        deadline: null,
        arbiter_orchestrator_id: orchestrators[0]!,
        probe_id: null,
        fallback_policy: 'escalate',
        request_digest: this.pick(this.hashes),
      },
    })
    const signature = this.pick(this.hashes)
    orchestrators.forEach((orchestratorId, i) => {
      const reading = i === 0 ? 'failure' : this.pick(['success', 'success', 'partial'] as const)
      this.queue.push({
        ...base,
        kind: 'interpretation.recorded',
        manifest_id: null,
        orchestrator_id: orchestratorId,
        verdict: null,
        data: {
          interpretation_id: randomUUID(),
          revision: 1,
          success_criterion_signature: signature,
          outcome_interpretation: reading,
          evidence_hash: evidenceHash,
          intended_action: {
            kind: reading === 'failure' ? 'compensate' : 'proceed',
            resources: [`refund:re_${story}`],
          },
        },
      })
    })
    const halted = this.random() < 0.05
    const verdict = halted
      ? 'CRITERIA_DIFFER'
      : this.pick(['ARBITER_DECIDES', 'AGREED', 'GROUND_TRUTH_RESOLVES'])
    this.queue.push({
      ...base,
      kind: 'manifest.issued',
      manifest_id: manifestId,
      orchestrator_id: null,
      verdict,
      data: { manifest_digest: this.pick(this.hashes), directive: halted ? 'HALT' : 'PROCEED' },
    })
    if (halted) {
      this.queue.push({
        ...base,
        kind: 'escalation.opened',
        manifest_id: manifestId,
        orchestrator_id: null,
        verdict,
        data: { receipt_digest: this.pick(this.hashes) },
      })
    }
    if (this.random() < 0.02) {
      this.queue.push({
        ...base,
        kind: 'dissent.recorded',
        manifest_id: manifestId,
        orchestrator_id: orchestrators[1]!,
        verdict: null,
        data: {
          success_criterion_signature: signature,
          outcome_interpretation: 'failure',
          evidence_hash: evidenceHash,
          intended_action: { kind: 'compensate', resources: [`refund:re_${story}`] },
          rationale: 'late reading after the decision',
        },
      })
    }
  }
}

export interface FillResult {
  inserted: number
  /** Records in the log afterwards (seq is gapless, so this is the head's seq). */
  total: number
  ms: number
  /** The first synthetic seq written by this call (null when nothing was needed). */
  firstSeq: number | null
}

/**
 * Appends synthetic records until the log holds `targetTotal`. Timestamps are `timeOriginMs + seq × 5 ms`, so
 * successive fills continue one timeline. The next batch is hashed while the previous one is being written.
 */
export async function fillAuditLog(
  connectionString: string,
  targetTotal: number,
  options: { timeOriginMs: number; batchSize?: number; onProgress?: (total: number) => void },
): Promise<FillResult> {
  const started = performance.now()
  const batchSize = options.batchSize ?? 10_000
  const client = new pg.Client({
    connectionString,
    application_name: 'arbiter-bench-fill',
    types: typeParsers,
  })
  await client.connect()
  try {
    const { rows } = await client.query<{ seq: number; hash: string; tree_size: number }>(
      'SELECT seq, hash, tree_size FROM audit_head',
    )
    let head = { seq: Number(rows[0]!.seq), hash: rows[0]!.hash }
    if (Number(rows[0]!.tree_size) !== head.seq) throw new Error('the sequencer has not built the tree yet')
    let range = compactRangeFromNodes(head.seq, await readNodes(client, rootNodes(head.seq)))
    const firstSeq = head.seq < targetTotal ? head.seq + 1 : null
    const stories = new Stories(head.seq + 1)
    let pending: Promise<void> | null = null
    while (head.seq < targetTotal) {
      const batch: SealedAuditRecord[] = []
      const count = Math.min(batchSize, targetTotal - head.seq)
      let previous = head
      for (let i = 0; i < count; i++) {
        const seq = previous.seq + 1
        const unhashed = {
          ...stories.next(),
          seq,
          at: new Date(options.timeOriginMs + seq * 5).toISOString(),
          prev_hash: previous.hash,
        }
        const record = sealAuditRecord(unhashed)
        batch.push(record)
        previous = { seq, hash: record.hash }
        // Let the previous batch's INSERT make progress on the socket while this one is hashed.
        if (i % 1000 === 999) await yieldToIo()
      }
      if (pending) await pending
      const extended = extendTree(range, batch)
      range = extended.range
      pending = writeBatch(client, head, batch, extended)
      // A failure surfaces at the next await; without this no-op handler it would crash the process meanwhile.
      pending.catch(() => {})
      head = previous
      options.onProgress?.(head.seq)
    }
    if (pending) await pending
    return {
      inserted: firstSeq === null ? 0 : head.seq - firstSeq + 1,
      total: head.seq,
      ms: performance.now() - started,
      firstSeq,
    }
  } finally {
    await client.end()
  }
}

async function writeBatch(
  client: pg.Client,
  expected: { seq: number; hash: string },
  batch: SealedAuditRecord[],
  extended: ReturnType<typeof extendTree> & { range: CompactRange },
) {
  const last = batch[batch.length - 1]!
  // The tree covers every record here (checked at the start), so the head's tree size is its seq.
  const write = sequencedBatchWrite(
    {
      records: batch,
      nodes: extended.nodes,
      drainedIntakeIds: [],
      head: { seq: last.seq, hash: last.hash, treeSize: extended.range.size },
    },
    { from: { ...expected, treeSize: expected.seq }, holder: null, ttlMs: 0 },
  )
  const outcome = batchWriteOutcome(await queryOne(client, write))
  if (outcome !== 'written') {
    throw new Error(`the audit head moved from ${expected.seq} while synthetic records were being written`)
  }
}

/**
 * Re-verifies, with the service's ChainVerifier, the records around a seq (the seam between the existing chain
 * and the synthetic records) and the last few records. Throws when the chain does not link.
 */
export async function checkChainSeams(connectionString: string, seqs: number[]): Promise<void> {
  const client = new pg.Client({ connectionString, types: typeParsers })
  await client.connect()
  try {
    for (const seq of seqs) {
      const from = Math.max(1, seq - 2)
      const { rows } = await client.query<AuditRow>(
        `SELECT ${AUDIT_COLUMNS} FROM audit_records WHERE seq BETWEEN $1 AND $2 ORDER BY seq`,
        [from, seq + 2],
      )
      const records = rows.map(auditRowToRecord)
      const [first, ...rest] = records
      if (!first) throw new Error(`no audit records around seq ${seq}`)
      const verifier = new ChainVerifier(from === 1 ? null : { seq: first.seq, hash: first.hash }, from === 1)
      for (const record of from === 1 ? records : rest) verifier.push(record)
      if (verifier.result.firstBadSeq !== null) {
        throw new Error(`synthetic audit chain does not verify at seq ${verifier.result.firstBadSeq}`)
      }
    }
  } finally {
    await client.end()
  }
}
