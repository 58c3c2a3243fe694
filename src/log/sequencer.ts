import { randomUUID } from 'node:crypto'
import type { PoolClient } from 'pg'
import { auditRange, auditRowToRecord } from '../audit/repository.ts'
import type { Pool } from '../db/pool.ts'
import { sequencerHasWork } from '../db/repositories/audit-intake.ts'
import { type OpenedBatch, openSequencerBatch, writeSequencedBatch } from '../db/repositories/log-batches.ts'
import { readNodes } from '../db/repositories/merkle-nodes.ts'
import { claimSequencerLease, releaseSequencerLease } from '../db/repositories/sequencer-lease.ts'
import type { AuditRecord } from '../domain/shared/audit-chain.ts'
import { onAuditEntriesCommitted } from './intake-signal.ts'
import {
  extendTree,
  keptRightEdge,
  type LogHead,
  sequenceEntries,
  type TreeAtHead,
} from './sequence-batch.ts'
import { type CompactRange, compactRangeFromNodes, rootNodes } from './transparency.ts'

export interface SequencerTiming {
  /** How long a lease lasts without renewal: a dead holder is replaced at most this long (+ retryMs) after. */
  leaseMs: number
  /** How often the holder renews its lease when idle, and how often the others try to take it. */
  renewMs: number
  /** How often the holder looks for entries written by other replicas (local writes wake it at once). */
  pollMs: number
  /** Entries per batch: one transaction each. */
  batchSize: number
  /**
   * After a batch that was not full, how long the sequencer lets entries gather before the next one, unless a
   * reader waits for its writes. With `carryCommits` (PostgreSQL) it counts from when the first entry was
   * committed here after the batch opened, so what was committed while the batch was in flight has gathered
   * already. Every batch has a fixed cost (its opening, its write, its commit, planned and run by the database):
   * under a steady load, batches of one or two entries each cost more than the changes they record, and on the
   * embedded database they took most of its one session. At most `renewMs`: the holder does not renew its lease
   * while it lingers.
   */
  lingerMs: number
  /** Old records added to the tree per transaction when the tree is first built over an existing chain. */
  backfillSize: number
  /**
   * Whether a batch's COMMIT may travel with the next batch's opening. Off for the embedded database, where a
   * connection inside a transaction keeps the one session from every other connection until it ends.
   */
  carryCommits: boolean
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
  carryCommits: true,
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
 * the database's clock) works. Each batch is one transaction that re-checks the lease and locks the log head, so
 * even a holder that lost its lease without noticing cannot extend the log: seqs are never given twice or
 * skipped. The tree's right edge (the hashes a batch extends) is kept from the last batch this holder locked or
 * wrote and used only while the locked head is still that batch's; otherwise (a new holder, another holder wrote
 * meanwhile, a COMMIT that did not go through) it is read from the stored nodes inside the batch.
 * A batch that was not full is followed by a short linger (`lingerMs`; on PostgreSQL counted from the next
 * batch's first local entry) in which entries gather for the next one, cut short when a reader waits for its
 * writes. A full batch is held uncommitted and its COMMIT travels with the next batch's opening, so a backlog
 * costs two round trips per batch: its opening and its write (three when a batch commits on its own).
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
   * When a local commit first rang since the current batch's opening returned (Date.now()), or null: how long its
   * entries have gathered already, which the linger after the batch does not make them wait again.
   */
  private gatheringSince: number | null = null
  private wake: ((why: Wake) => void) | null = null
  private unsubscribe: (() => void) | null = null
  private readonly batchListeners = new Set<(batch: CommittedBatch) => void>()
  /** The head after the last batch committed. */
  private lastHead: LogHead | null = null
  /**
   * The tree at the head this holder last locked or wrote (whether or not that COMMIT went through): the head and
   * the tree's right edge there.
   */
  private knownTree: TreeAtHead | null = null
  /** A batch written on `client` and not yet committed: the next batch's opening commits it. */
  private held: { client: PoolClient; batch: CommittedBatch } | null = null
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
      await releaseSequencerLease(this.db, this.id).catch(() => {})
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
        // While a batch is held its transaction locks the lease row (a claim would wait on it): the next opening
        // renews the lease.
        if (!this.held && (!this.leader || Date.now() - this.leaseRenewedAt >= this.timing.renewMs)) {
          const was = this.leader
          this.leader = await claimSequencerLease(this.db, this.id, this.timing.leaseMs)
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
          // Only where other connections commit while a batch is in flight (PostgreSQL): on the embedded database
          // a batch keeps the one session until it ends, so every commit that rang during it is in it already.
          const since = this.timing.carryCommits ? this.gatheringSince : null
          const linger = lingerLeft(this.timing.lingerMs, since, Date.now())
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
    // Stopping: a batch still held is committed now.
    await this.commitHeld().catch(this.options.onError)
  }

  /**
   * One batch: adds old records to the tree if any lack a leaf, else sequences waiting entries. Returns how many
   * records it placed, and whether the batch was full (more is likely waiting). A full batch of entries is held
   * uncommitted, and the next batch's opening commits it in the same round trip; any other batch commits now.
   */
  private async sequenceOnce(): Promise<{ placed: number; full: boolean }> {
    const held = this.held
    if (!held && !this.workKnown && !(await sequencerHasWork(this.db))) return { placed: 0, full: false }
    this.workKnown = false
    // A reader that asks from now on waits for a later batch than this one: it is not to linger.
    this.hurried = false
    this.held = null
    const client = held?.client ?? (await this.db.connect())
    let keep = false
    let broken: Error | undefined
    // A held batch whose COMMIT travels with this opening, until the opening returns.
    let unconfirmed = held?.batch ?? null
    try {
      const { timing } = this
      const opened = await openSequencerBatch(
        client,
        this.id,
        timing.leaseMs,
        timing.batchSize,
        held !== null,
      )
      // What commits from now on is for the next batch (a commit this opening saw may still ring after this: the
      // linger then errs long, never short, by a round trip at most).
      this.gatheringSince = null
      if (held) this.announce(held.batch)
      unconfirmed = null
      const written = await this.batch(client, opened)
      const placed = written?.placed ?? 0
      const full = written?.full ?? false
      if (written && written.records.length > 0 && full && timing.carryCommits && this.running) {
        this.held = { client, batch: written }
        keep = true
        return { placed, full }
      }
      await client.query('COMMIT')
      if (written) this.announce(written)
      return { placed, full }
    } catch (err) {
      broken = await rollBack(client)
      // The opening may have failed after its COMMIT: a held batch that did commit is still announced.
      if (unconfirmed && !broken) await this.announceIfCommitted(client, unconfirmed)
      throw err
    } finally {
      if (!keep) client.release(broken)
    }
  }

  /**
   * Commits the batch held for the next opening, if there is one. Defensive: the loop only stops between
   * batches, and a batch is held only while the sequencer runs, so a stop normally finds none.
   */
  private async commitHeld(): Promise<void> {
    const held = this.held
    if (!held) return
    this.held = null
    let broken: Error | undefined
    try {
      await held.client.query('COMMIT')
      this.announce(held.batch)
    } catch (err) {
      broken = await rollBack(held.client)
      throw err
    } finally {
      held.client.release(broken)
    }
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

  /** Announces a batch whose commit's outcome is unknown if its last record is in the log as written. */
  private async announceIfCommitted(client: PoolClient, batch: CommittedBatch): Promise<void> {
    const last = batch.records.at(-1)
    if (!last) return
    const found = await auditRange(client, last.seq, last.seq, 1).catch(() => [])
    if (found[0]?.hash === last.hash) this.announce(batch)
  }

  /**
   * The body of one batch transaction, opened (lease re-checked under a row lock held until commit — fencing —
   * head locked, right edge and next entries read): writes everything in one round trip. Returns what it wrote,
   * or null when there was nothing to write or the lease is gone.
   */
  private async batch(
    tx: PoolClient,
    opened: OpenedBatch,
  ): Promise<(CommittedBatch & { placed: number; full: boolean }) | null> {
    const head = opened.head
    if (!head) {
      this.leader = false
      return null
    }
    this.leaseRenewedAt = Date.now()
    const locked: LogHead = { seq: head.seq, hash: head.hash, treeSize: head.tree_size }
    if (head.tree_size < head.seq) {
      const range = await this.rightEdge(tx, locked)
      const last = Math.min(head.seq, head.tree_size + this.timing.backfillSize)
      const records = (await auditRange(tx, head.tree_size + 1, last, last - head.tree_size)).map(
        auditRowToRecord,
      )
      const extended = extendTree(range, records)
      const newHead = { seq: head.seq, hash: head.hash, treeSize: extended.range.size }
      await writeSequencedBatch(tx, {
        records: [],
        nodes: extended.nodes,
        drainedIntakeIds: [],
        head: newHead,
      })
      this.knownTree = { head: newHead, range: extended.range }
      this.workKnown = true
      return { head: newHead, records: [], placed: records.length, full: true }
    }
    const { entries } = opened
    if (entries.length === 0) return null
    const batch = sequenceEntries(locked, await this.rightEdge(tx, locked), entries)
    await writeSequencedBatch(tx, {
      records: batch.records,
      nodes: batch.nodes,
      drainedIntakeIds: entries.map((entry) => entry.id),
      head: batch.head,
    })
    this.knownTree = { head: batch.head, range: batch.range }
    const full = entries.length === this.timing.batchSize
    if (full) this.workKnown = true
    return {
      head: batch.head,
      // Listeners get the records as the API serves them, without the canonical text stored beside them.
      records: batch.records.map(({ canonical: _canonical, ...record }) => record),
      placed: entries.length,
      full,
    }
  }

  /**
   * The tree's right edge at the locked head: the one this holder knows when the head is still the one it knows
   * (the same last record, so the same leaves), else read from the stored nodes.
   */
  private async rightEdge(tx: PoolClient, head: LogHead): Promise<CompactRange> {
    const kept = keptRightEdge(this.knownTree, head)
    if (kept) return kept
    const range = compactRangeFromNodes(head.treeSize, await readNodes(tx, rootNodes(head.treeSize)))
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

/** Rolls a batch transaction back; returns the error when the connection is unusable (not to be pooled again). */
async function rollBack(client: PoolClient): Promise<Error | undefined> {
  try {
    await client.query('ROLLBACK')
    return undefined
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err))
  }
}
