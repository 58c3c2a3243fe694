import { randomUUID } from 'node:crypto'
import type { PoolClient } from 'pg'
import type { Pool } from '../../db/pool.ts'
import { execute, queryOne, queryRows, runStatement } from '../../db/statement.ts'
import { inSpan, type SpanAttributes } from '../../tracing/spans.ts'
import type { AuditRecord } from '../core/records.ts'
import {
  extendTree,
  keptRightEdge,
  type LogHead,
  sequenceEntries,
  type TreeAtHead,
} from '../core/sequence-batch.ts'
import { type CompactRange, compactRangeFromNodes, rootNodes } from '../core/transparency.ts'
import {
  type BatchWriteOutcome,
  batchWriteOutcome,
  type OpenedBatch,
  openedBatch,
  type SequencedWrite,
  sequencedBatchWrite,
  sequencerBatchRead,
} from '../store/batches.ts'
import { sequencerWork } from '../store/intake.ts'
import { readNodes } from '../store/merkle-nodes.ts'
import { type AuditHeadRow, auditRange, auditRowToRecord } from '../store/records.ts'
import { sequencerLeaseClaim, sequencerLeaseRelease } from '../store/sequencer-lease.ts'
import { onAuditEntriesCommitted } from './intake-signal.ts'

export interface SequencerTiming {
  /** How long a lease lasts without renewal: a dead holder is replaced at most this long (+ retryMs) after. */
  leaseMs: number
  /** How often the holder renews its lease when idle, and how often the others try to take it. */
  renewMs: number
  /** How often the holder looks for entries written by other replicas (local writes wake it at once). */
  pollMs: number
  /** Entries per batch: each batch is written in one statement. */
  batchSize: number
  /**
   * After a batch that was not full, how long the sequencer lets entries gather before the next one, unless a
   * reader waits for its writes. It counts from when the first entry was committed here after the batch was
   * read, so what was committed while the batch was in flight has gathered already. Every batch has a fixed cost
   * (its read and its write, planned and run by the database): under a steady load, batches of one or two entries
   * each cost more than the changes they record, and on the embedded database they took most of its one session.
   * At most `renewMs`: the holder does not renew its lease while it lingers.
   */
  lingerMs: number
  /** Old records added to the tree per batch when the tree is first built over an existing chain. */
  backfillSize: number
}

/** What a committed batch placed: the new head, and the records (with their seq and `at`, time of the change). */
export interface CommittedBatch {
  head: LogHead
  records: readonly AuditRecord[]
}

export const DEFAULT_SEQUENCER_TIMING: SequencerTiming = {
  leaseMs: 3_000,
  renewMs: 1_000,
  pollMs: 20,
  batchSize: 256,
  lingerMs: 20,
  backfillSize: 4_096,
}

export interface SequencerOptions {
  timing?: Partial<SequencerTiming>
  /**
   * Signs a checkpoint over the tree if it has grown since the last one, and returns the size it covers. Called by
   * the lease holder at most once per `checkpointIntervalMs`.
   */
  signCheckpoint: () => Promise<number>
  checkpointIntervalMs: number
  onError: (err: unknown) => void
}

/**
 * The one writer of the log. Every replica runs one; only the holder of the lease (a row in PostgreSQL, timed by
 * the database's clock) works. A batch is two round trips and holds no transaction open between them: a read (the
 * lease renewed, the head, the next entries), then one statement that writes everything and commits on its own,
 * fenced: it writes nothing unless this holder still has the lease and the head is still the one read, so even a
 * holder that lost its lease without noticing cannot extend the log, and seqs are never given twice or skipped.
 * The tree's right edge (the hashes a batch extends) is kept from the last batch this holder read or wrote and
 * used only while the head read is still that batch's; otherwise (a new holder, another holder wrote meanwhile, a
 * write that did not go through) it is read from the stored nodes.
 * A batch that was not full is followed by a short linger (`lingerMs`, counted from the next batch's first local
 * entry) in which entries gather for the next one, cut short when a reader waits for its writes.
 */
export class Sequencer {
  /** This process's lease-holder id. */
  readonly id = randomUUID()
  private readonly timing: SequencerTiming
  private running = false
  private loop: Promise<void> | null = null
  private leader = false
  private leaseRenewedAt = 0
  private tookLeaseAt = 0
  /**
   * Set when there may be work (a local commit rang, a reader waits, the last batch was full or a backfill, the
   * lease was just taken, a batch failed): the next batch skips the idle check.
   */
  private workKnown = true
  /** Set when a reader waits for its writes: the sequencer does not linger before the next batch. */
  private hurried = false
  /**
   * When a local commit first rang since the current batch's read returned (Date.now()), or null: how long its
   * entries have gathered already, which the linger after the batch does not make them wait again.
   */
  private gatheringSince: number | null = null
  private wake: ((why: Wake) => void) | null = null
  private unsubscribe: (() => void) | null = null
  private readonly batchListeners = new Set<(batch: CommittedBatch) => void>()
  /** The head after the last batch committed. */
  private lastHead: LogHead | null = null
  /**
   * The tree at the head this holder last read or wrote (whether or not that write went through): the head and
   * the tree's right edge there.
   */
  private knownTree: TreeAtHead | null = null
  /**
   * A batch whose write failed without an answer (the connection broke after sending it, say): it may have been
   * written. The next batch's read announces it if the head is the one it wrote.
   */
  private unconfirmed: CommittedBatch | null = null
  private checkpointedSize: number | null = null
  private checkpointedAt = 0
  private signing: Promise<void> | null = null

  constructor(
    private readonly db: Pool,
    private readonly options: SequencerOptions,
  ) {
    const timing = { ...DEFAULT_SEQUENCER_TIMING, ...options.timing }
    this.timing = { ...timing, lingerMs: Math.min(timing.lingerMs, timing.renewMs) }
  }

  get isLeader(): boolean {
    return this.leader
  }

  /**
   * Whether this process holds the lease as far as it knows now: it is the holder and renewed the lease less than
   * `leaseMs` ago (a holder cut off from the database stops counting as one when its lease would have expired).
   */
  get holdsLease(): boolean {
    return this.leader && Date.now() - this.leaseRenewedAt < this.timing.leaseMs
  }

  /** When this process last took the lease (Date.now()), or null while it does not hold it. */
  get leaderSince(): number | null {
    return this.leader ? this.tookLeaseAt : null
  }

  get pollMs(): number {
    return this.timing.pollMs
  }

  /** How long the holder lets entries gather after a batch that was not full (`lingerMs`, at most `renewMs`). */
  get lingerMs(): number {
    return this.timing.lingerMs
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.unsubscribe = onAuditEntriesCommitted(() => this.nudge())
    this.loop = this.run()
  }

  /**
   * Stops after the batch in flight and hands the lease over at once, so another replica need not wait. With
   * `handOver: false` it stops as a crashed process would: the lease is left to expire.
   */
  async stop(options: { handOver?: boolean } = {}): Promise<void> {
    if (!this.running) return
    this.running = false
    this.unsubscribe?.()
    this.wake?.('stop')
    await this.loop
    await this.signing
    if (this.leader && options.handOver !== false) {
      await runStatement(this.db, sequencerLeaseRelease(this.id)).catch(() => {})
    }
    this.leader = false
  }

  /** There may be new entries (a local commit wrote some): the holder looks now rather than at its next poll. */
  nudge(): void {
    this.workKnown = true
    this.gatheringSince ??= Date.now()
    if (this.leader) this.wake?.('nudge')
  }

  /** A reader waits for entries to be sequenced: the holder looks now, and does not linger after its batch. */
  hurry(): void {
    this.workKnown = true
    this.hurried = true
    if (this.leader) this.wake?.('hurry')
  }

  /** Resolves when this process next commits a batch, or after `ms`, whichever comes first. */
  nextBatch(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.batchListeners.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.batchListeners.add(done)
    })
  }

  /** Calls `listener` after every batch this process commits. */
  onBatch(listener: (batch: CommittedBatch) => void): () => void {
    this.batchListeners.add(listener)
    return () => this.batchListeners.delete(listener)
  }

  private async run(): Promise<void> {
    let backoffMs = 0
    while (this.running) {
      try {
        if (!this.leader || Date.now() - this.leaseRenewedAt >= this.timing.renewMs) {
          const was = this.leader
          this.leader =
            (await execute(this.db, sequencerLeaseClaim(this.id, this.timing.leaseMs))).rowCount === 1
          if (this.leader) this.leaseRenewedAt = Date.now()
          if (this.leader && !was) {
            this.tookLeaseAt = Date.now()
            // A new holder knows nothing of what the last one did: look for work and checkpoint state afresh.
            this.workKnown = true
            this.checkpointedSize = null
          }
        }
        if (!this.leader) {
          await this.pause(this.timing.renewMs, 'stop')
          continue
        }
        const { placed, full } = await this.sequenceOnce()
        backoffMs = 0
        this.checkpointIfDue()
        if (placed === 0) await this.pause(this.timing.pollMs, 'nudge')
        else if (!full) {
          const linger = lingerLeft(this.timing.lingerMs, this.gatheringSince, Date.now())
          if (linger > 0) await this.pause(linger, 'hurry')
        }
      } catch (err) {
        this.options.onError(err)
        // The database is away or refused the batch: everything in it rolled back; try again shortly.
        backoffMs = Math.min(1_000, backoffMs === 0 ? 50 : backoffMs * 2)
        this.workKnown = true
        await this.pause(backoffMs, 'stop')
      }
    }
  }

  /**
   * One batch: adds old records to the tree if any lack a leaf, else sequences waiting entries. Returns how many
   * records it placed, and whether the batch was full (more is likely waiting).
   */
  private async sequenceOnce(): Promise<{ placed: number; full: boolean }> {
    if (!this.workKnown && !(await queryOne(this.db, sequencerWork())).work) return { placed: 0, full: false }
    this.workKnown = false
    // A reader that asks from now on waits for a later batch than this one: it is not to linger.
    this.hurried = false
    return inSpan('arbiter.sequencer.batch', {}, async (span) => {
      const client = await this.db.connect()
      let failed: Error | undefined
      try {
        const read = sequencerBatchRead(this.id, this.timing.leaseMs, this.timing.batchSize)
        const opened = openedBatch(await execute(client, read))
        // What commits from now on is for the next batch (a commit this read saw may still ring after this: the
        // linger then errs long, never short, by a round trip at most).
        this.gatheringSince = null
        const written = await this.batch(client, opened)
        if (written) this.announce(written)
        if (span.recording) span.setAttributes(batchAttributes(written, Date.now()))
        return { placed: written?.placed ?? 0, full: written?.full ?? false }
      } catch (err) {
        // The connection may be unusable (the database went away mid-batch): it is not pooled again.
        failed = err instanceof Error ? err : new Error(String(err))
        throw err
      } finally {
        client.release(failed)
      }
    })
  }

  private announce(batch: CommittedBatch): void {
    this.lastHead = batch.head
    for (const listener of [...this.batchListeners]) {
      try {
        listener(batch)
      } catch (err) {
        this.options.onError(err)
      }
    }
  }

  /**
   * Writes a batch computed from `from`. When the write fails, whether it was written is unknown (its answer may
   * be what was lost): the batch is kept as unconfirmed for the next read to settle.
   */
  private async write(
    client: PoolClient,
    batch: SequencedWrite,
    from: LogHead,
    written: CommittedBatch,
  ): Promise<BatchWriteOutcome> {
    this.unconfirmed = written
    const fence = { from, holder: this.id, ttlMs: this.timing.leaseMs }
    const outcome = batchWriteOutcome(await queryOne(client, sequencedBatchWrite(batch, fence)))
    this.unconfirmed = null
    return outcome
  }

  /**
   * Announces the batch whose write failed without an answer if the head read after it is the one it wrote (it
   * was written: nothing else gives the log that head); either way it is settled.
   */
  private settleUnconfirmed(head: AuditHeadRow | null): void {
    const batch = this.unconfirmed
    this.unconfirmed = null
    if (!batch || !head) return
    if (
      head.seq === batch.head.seq &&
      head.hash === batch.head.hash &&
      head.tree_size === batch.head.treeSize
    ) {
      this.announce(batch)
    }
  }

  /**
   * What a write that wrote nothing means: the lease is gone (this holder stops working until it takes it
   * again), or another holder moved the head (the next batch starts from the stored tree).
   */
  private refused(outcome: Exclude<BatchWriteOutcome, 'written'>): null {
    if (outcome === 'lease lost') this.leader = false
    this.knownTree = null
    this.workKnown = true
    return null
  }

  /**
   * The rest of one batch, once read (lease renewed, head and next entries read): computes it and writes
   * everything in one fenced statement. Returns what it wrote, or null when there was nothing to write, the lease
   * is gone or the head moved meanwhile.
   */
  private async batch(
    client: PoolClient,
    opened: OpenedBatch,
  ): Promise<(CommittedBatch & { placed: number; full: boolean }) | null> {
    const head = opened.head
    this.settleUnconfirmed(head)
    if (!head) {
      this.leader = false
      return null
    }
    this.leaseRenewedAt = Date.now()
    const from: LogHead = { seq: head.seq, hash: head.hash, treeSize: head.tree_size }
    if (head.tree_size < head.seq) {
      const range = await this.rightEdge(client, from)
      const last = Math.min(head.seq, head.tree_size + this.timing.backfillSize)
      const records = (
        await queryRows(client, auditRange(head.tree_size + 1, last, last - head.tree_size))
      ).map(auditRowToRecord)
      const extended = extendTree(range, records)
      const newHead = { seq: head.seq, hash: head.hash, treeSize: extended.range.size }
      this.knownTree = { head: newHead, range: extended.range }
      const done = { head: newHead, records: [], placed: records.length, full: true }
      const write = { records: [], nodes: extended.nodes, drainedIntakeIds: [], head: newHead }
      const outcome = await this.write(client, write, from, done)
      if (outcome !== 'written') return this.refused(outcome)
      this.workKnown = true
      return done
    }
    const { entries } = opened
    if (entries.length === 0) return null
    const batch = sequenceEntries(from, await this.rightEdge(client, from), entries)
    this.knownTree = { head: batch.head, range: batch.range }
    const full = entries.length === this.timing.batchSize
    const done = {
      head: batch.head,
      // Listeners get the records as the API serves them, without the canonical text stored beside them.
      records: batch.records.map(({ canonical: _canonical, ...record }) => record),
      placed: entries.length,
      full,
    }
    const write = {
      records: batch.records,
      nodes: batch.nodes,
      drainedIntakeIds: entries.map((entry) => entry.id),
      head: batch.head,
    }
    const outcome = await this.write(client, write, from, done)
    if (outcome !== 'written') return this.refused(outcome)
    if (full) this.workKnown = true
    return done
  }

  /**
   * The tree's right edge at the head read: the one this holder knows when the head is still the one it knows
   * (the same last record, so the same leaves), else read from the stored nodes.
   */
  private async rightEdge(client: PoolClient, head: LogHead): Promise<CompactRange> {
    const kept = keptRightEdge(this.knownTree, head)
    if (kept) return kept
    const range = compactRangeFromNodes(head.treeSize, await readNodes(client, rootNodes(head.treeSize)))
    this.knownTree = { head, range }
    return range
  }

  /**
   * Signs a checkpoint when one is due, without holding up the next batch (signing reads the tree through the
   * request pool, not the sequencer's connection).
   */
  private checkpointIfDue(): void {
    if (!this.leader || this.signing) return
    if (Date.now() - this.checkpointedAt < this.options.checkpointIntervalMs) return
    // Nothing grew since the last checkpoint this holder saw: no database round trip.
    if (this.checkpointedSize !== null && (this.lastHead?.treeSize ?? 0) <= this.checkpointedSize) return
    this.signing = this.options
      .signCheckpoint()
      .then((size) => {
        this.checkpointedSize = size
        this.checkpointedAt = Date.now()
      })
      .catch(this.options.onError)
      .finally(() => {
        this.signing = null
      })
  }

  /**
   * Waits `ms`, or less: a stop always ends the wait; `endsOn: 'hurry'` also ends it when a reader waits, and
   * `endsOn: 'nudge'` when there may be entries at all (a nudge or a reader).
   */
  private pause(ms: number, endsOn: Wake): Promise<void> {
    if (!this.running) return Promise.resolve()
    if (endsOn === 'nudge' && this.workKnown) return Promise.resolve()
    if (endsOn !== 'stop' && this.hurried) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.wake = null
        resolve()
      }
      const timer = setTimeout(done, ms)
      timer.unref()
      this.wake = (why) => {
        if (why === 'stop' ? !this.running : WAKE_RANK[why] >= WAKE_RANK[endsOn]) done()
      }
    })
  }
}

/**
 * What is left of the linger after a batch that was not full: `lingerMs` counts from when the first entry of the
 * next batch was committed here (`gatheringSince`), not from the batch's end, so entries committed while a batch
 * was in flight do not wait a whole linger more. With none committed here yet, the whole linger.
 */
export function lingerLeft(lingerMs: number, gatheringSince: number | null, now: number): number {
  if (gatheringSince === null) return lingerMs
  return Math.max(0, Math.min(lingerMs, gatheringSince + lingerMs - now))
}

/**
 * What ends a pause: a stop ends every pause, a reader waiting for its writes ('hurry') every pause but the
 * lease's and a back-off's, a commit's nudge only the idle poll.
 */
type Wake = 'nudge' | 'hurry' | 'stop'
const WAKE_RANK: Record<Wake, number> = { nudge: 0, hurry: 1, stop: 2 }

/** A batch's span attributes: how many records it placed, and how long its oldest entry waited (ms). */
function batchAttributes(
  written: (CommittedBatch & { placed: number; full: boolean }) | null,
  now: number,
): SpanAttributes {
  const oldest = written?.records[0]?.at
  return {
    'arbiter.batch.size': written?.placed ?? 0,
    'arbiter.batch.full': written?.full ?? false,
    ...(oldest === undefined ? {} : { 'arbiter.batch.lag_ms': Math.max(0, now - Date.parse(oldest)) }),
  }
}
