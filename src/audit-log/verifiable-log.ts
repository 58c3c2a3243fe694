import type { QueryResultRow } from 'pg'
import type { SigningKey } from '../crypto/signing-key.ts'
import type { Pool, Queryable } from '../db/pool.ts'
import { manifestById } from '../db/repositories/manifests.ts'
import { queryFirst, queryOne, queryRows, statement } from '../db/statement.ts'
import { AppError } from '../errors.ts'
import { type CheckpointSigner, currentCheckpoint } from './checkpoints.ts'
import { type SignedCheckpoint, signedCheckpointFromRow } from './core/checkpoint.ts'
import type { AuditRecord } from './core/records.ts'
import {
  consistencyProofNodes,
  encodeBase64,
  inclusionProofNodes,
  type NodeId,
  nodeKey,
  nodesToFetch,
  proofFromNodes,
} from './core/transparency.ts'
import { Sequencer, type SequencerTiming } from './sequencer/sequencer.ts'
import { type LogState, type LogStateRow, logStateFromRow, logStateQuery } from './store/checkpoints.ts'
import { logId } from './store/identity.ts'
import { sequencedQuery, sequencedRows, sequencingPendingUpTo, sequencingState } from './store/intake.ts'
import { readNodes } from './store/merkle-nodes.ts'
import { auditRange, auditRowToRecord } from './store/records.ts'
import type { ParallelVerify } from './verify-lanes.ts'
import { type VerifyOptions, type VerifyReport, verifyLog } from './verify-log.ts'

export interface VerifiableLogOptions {
  /** The checkpoint origin; default `arbiter.local/log/<log id>`. */
  origin?: string | undefined
  /** At most one background checkpoint per interval while the log grows. */
  checkpointIntervalMs: number
  /** How long a read waits for the sequencer before answering 503. */
  catchUpTimeoutMs?: number
  sequencer?: Partial<SequencerTiming>
  /**
   * The sequencer's own connection (a pool of one): sharing the request pool, its batches would queue behind
   * requests under load, which is exactly when the log must keep up. Defaults to the request pool.
   */
  sequencerDb?: Pool
  /** Lets `verify` check large logs on worker threads, each with its own connection to this database. */
  parallelVerify?: ParallelVerify
  onError: (err: unknown) => void
}

export interface InclusionProof {
  seq: number
  leaf_index: number
  tree_size: number
  /** Base64 of the leaf hash, SHA-256(0x00 ‖ JCS(record)). */
  leaf_hash: string
  proof: string[]
  checkpoint: SignedCheckpoint | null
}

export interface ConsistencyProof {
  from_size: number
  to_size: number
  proof: string[]
}

export interface ManifestInclusion extends Omit<InclusionProof, 'seq' | 'checkpoint'> {
  manifest_id: string
  record: AuditRecord
  checkpoint: SignedCheckpoint
}

/**
 * The audit log as readers see it: read-your-writes, checkpoints and proofs, over the sequencer this process runs.
 * Every read method first waits until every change committed before it was called is in the log.
 */
export class VerifiableLog {
  readonly sequencer: Sequencer
  private readonly catchUpTimeoutMs: number
  private readonly parallelVerify: ParallelVerify | undefined

  private constructor(
    private readonly db: Pool,
    readonly signer: CheckpointSigner,
    options: VerifiableLogOptions,
  ) {
    this.catchUpTimeoutMs = options.catchUpTimeoutMs ?? 5_000
    this.parallelVerify = options.parallelVerify
    this.sequencer = new Sequencer(options.sequencerDb ?? db, {
      timing: options.sequencer,
      checkpointIntervalMs: options.checkpointIntervalMs,
      signCheckpoint: async () => (await currentCheckpoint(db, signer)).tree_size,
      onError: options.onError,
    })
  }

  /** Reads the log's identity (for the default origin); the sequencer starts with `start()`. */
  static async open(db: Pool, key: SigningKey, options: VerifiableLogOptions): Promise<VerifiableLog> {
    const origin = options.origin ?? `arbiter.local/log/${(await queryOne(db, logId())).log_id}`
    return new VerifiableLog(db, { origin, key }, options)
  }

  get origin(): string {
    return this.signer.origin
  }

  start(): void {
    this.sequencer.start()
  }

  stop(): Promise<void> {
    return this.sequencer.stop()
  }

  /**
   * Read your writes: returns once every audit entry committed before the call is sequenced (and the tree holds
   * every record). Holds no connection while it waits. 503 when the sequencer cannot catch up in time.
   */
  async catchUp(): Promise<void> {
    const { mark, pending } = await queryOne(this.db, sequencingState())
    if (pending) await this.sequenced(mark)
  }

  /**
   * Read your writes in one round trip while the log keeps up: `query` runs in one statement with the sequencing
   * state (`sequencedQuery`, ordered by `orderBy`); only when something committed before the call still waits for
   * the sequencer does the read wait for it and run `query` again.
   */
  async readYourWrites<R extends object>(
    query: { text: string; values?: unknown[] },
    orderBy: string,
  ): Promise<R[]> {
    const first = sequencedRows(await queryRows(this.db, sequencedQuery<R>(query, orderBy)))
    if (!first.pending) return first.rows
    await this.sequenced(first.mark)
    return queryRows(this.db, statement<R & QueryResultRow>(query.text, query.values ?? []))
  }

  /**
   * Waits until every intake entry up to `mark` (a `sequencingState` mark) is sequenced, hurrying the
   * sequencer; LOG_CATCHING_UP after the catch-up timeout.
   */
  async sequenced(mark: number): Promise<void> {
    const deadline = Date.now() + this.catchUpTimeoutMs
    for (;;) {
      this.sequencer.hurry()
      const remaining = deadline - Date.now()
      if (remaining <= 0) {
        throw new AppError(
          'LOG_CATCHING_UP',
          'the audit log has not yet sequenced every change committed before this request; retry shortly',
        )
      }
      await this.sequencer.nextBatch(Math.min(this.sequencer.pollMs, remaining))
      if (!(await queryOne(this.db, sequencingPendingUpTo(mark))).pending) return
    }
  }

  /** Verifies the chain, the tree and the checkpoints over a seq range, including every change committed before. */
  async verify(options: VerifyOptions = {}): Promise<VerifyReport> {
    await this.catchUp()
    return verifyLog(this.db, { parallel: this.parallelVerify, ...options })
  }

  /** A signed checkpoint covering every change committed before the call (signed now if the latest does not). */
  async checkpoint(): Promise<SignedCheckpoint> {
    return signedCheckpointFromRow(await currentCheckpoint(this.db, this.signer, await this.logState()))
  }

  /**
   * The log's head and checkpoints (see LogState), including every change committed before the call: in one
   * statement while the log keeps up.
   */
  private async logState(atSize: number | null = null, nodes: readonly NodeId[] = []): Promise<LogState> {
    const [row] = await this.readYourWrites<LogStateRow>(logStateQuery(atSize, nodes), 'seq')
    return logStateFromRow(row!)
  }

  /**
   * The inclusion proof of record `seq`: in the tree of `treeSize` (the stored checkpoint of that size, if any,
   * comes with it), or without a size against a signed checkpoint covering every change committed before the call.
   */
  async inclusion(seq: number, treeSize?: number): Promise<InclusionProof> {
    // With the size given, the nodes the proof needs are known before the log is read: one statement.
    const plan = treeSize !== undefined && seq <= treeSize ? inclusionPlan(seq, treeSize) : null
    const state = await this.logState(treeSize ?? null, plan?.nodes)
    let size: number
    let checkpoint: SignedCheckpoint | null
    if (treeSize === undefined) {
      const row = await currentCheckpoint(this.db, this.signer, state)
      size = row.tree_size
      checkpoint = signedCheckpointFromRow(row)
    } else {
      assertWithinLog(state, treeSize, 'tree_size')
      size = treeSize
      checkpoint = state.atSize ? signedCheckpointFromRow(state.atSize) : null
    }
    if (seq > size) throw new AppError('NOT_FOUND', `seq ${seq} is not in the tree of size ${size}`)
    const proof = plan ? inclusionProofFrom(plan, state.nodes) : await inclusionProofAt(this.db, seq, size)
    return { seq, ...proof, checkpoint }
  }

  /** The RFC 9162 consistency proof from the tree of `fromSize` to the tree of `toSize` (1 ≤ from ≤ to). */
  async consistency(fromSize: number, toSize: number): Promise<ConsistencyProof> {
    if (fromSize > toSize) throw new AppError('VALIDATION', 'from_size must not exceed to_size')
    // The nodes the proof needs are known from the sizes: read with the log's state, in one statement.
    const plan = consistencyProofNodes(fromSize, toSize)
    const state = await this.logState(null, nodesToFetch(plan))
    assertWithinLog(state, toSize, 'to_size')
    const proof = proofFromNodes(plan, state.nodes)
    return { from_size: fromSize, to_size: toSize, proof: proof.map(encodeBase64) }
  }

  /** Proof that a manifest was logged: its manifest.issued record and that record's inclusion proof. */
  async manifestInclusion(manifestId: string): Promise<ManifestInclusion> {
    const state = await this.logState()
    let manifest = await queryFirst(this.db, manifestById(manifestId))
    if (!manifest) throw new AppError('NOT_FOUND', `no manifest ${manifestId}`)
    if (manifest.audit_seq === null) {
      // Committed after this request arrived, so not waited for: wait once more.
      await this.catchUp()
      manifest = await queryFirst(this.db, manifestById(manifestId))
    }
    const seq = manifest?.audit_seq
    if (seq === null || seq === undefined) {
      throw new AppError('LOG_CATCHING_UP', `manifest ${manifestId} is not sequenced yet; retry shortly`)
    }
    const row = await queryFirst(this.db, auditRange(seq, seq, 1))
    if (!row) throw new Error(`manifest ${manifestId} names audit seq ${seq}, which is missing`)
    // The state read first covers the record, unless it was sequenced since: then the log is read again.
    const checkpoint = await currentCheckpoint(
      this.db,
      this.signer,
      seq <= state.head.tree_size ? state : undefined,
    )
    return {
      manifest_id: manifestId,
      record: auditRowToRecord(row),
      ...(await inclusionProofAt(this.db, seq, checkpoint.tree_size)),
      checkpoint: signedCheckpointFromRow(checkpoint),
    }
  }
}

function assertWithinLog(state: LogState, size: number, name: string): void {
  if (size > state.head.tree_size) {
    throw new AppError('NOT_FOUND', `${name} ${size} is beyond the log (${state.head.tree_size} records)`)
  }
}

/** The inclusion proof of record `seq` in the tree of `treeSize`, from O(log n) stored nodes in one query. */
export async function inclusionProofAt(db: Queryable, seq: number, treeSize: number) {
  const plan = inclusionPlan(seq, treeSize)
  return inclusionProofFrom(plan, await readNodes(db, plan.nodes))
}

/** What the inclusion proof of record `seq` in the tree of `treeSize` is made of: its leaf and the nodes to read. */
function inclusionPlan(seq: number, treeSize: number) {
  const leaf = { level: 0, index: seq - 1 }
  const proof = inclusionProofNodes(leaf.index, treeSize)
  return { seq, treeSize, leaf, proof, nodes: [leaf, ...nodesToFetch(proof)] }
}

function inclusionProofFrom(plan: ReturnType<typeof inclusionPlan>, hashes: Map<string, Uint8Array>) {
  const leafHash = hashes.get(nodeKey(plan.leaf))
  if (!leafHash) throw new Error(`the tree has no leaf for seq ${plan.seq}`)
  return {
    leaf_index: plan.leaf.index,
    tree_size: plan.treeSize,
    leaf_hash: encodeBase64(leafHash),
    proof: proofFromNodes(plan.proof, hashes).map(encodeBase64),
  }
}
