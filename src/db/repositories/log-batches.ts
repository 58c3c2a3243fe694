import type { AuditRecord } from '../../domain/audit-chain.ts'
import type { StoredNode } from '../../log/transparency.ts'
import type { Queryable } from '../pool.ts'
import { AUDIT_COLUMNS } from './audit-records.ts'
import { nodeArrays } from './merkle-nodes.ts'

/**
 * Marks the current transaction as the sequencer's: the intake refuses deletes from anyone else. Must run first
 * in the batch transaction (SET LOCAL ends with it).
 */
export async function beginSequencerTransaction(db: Queryable): Promise<void> {
  await db.query(`SET LOCAL arbiter.sequencer = 'on'`)
}

export interface SequencedWrite {
  records: readonly AuditRecord[]
  nodes: readonly StoredNode[]
  /** The intake entries the records were made from: removed in the same statement. */
  drainedIntakeIds: readonly number[]
  head: { seq: number; hash: string; treeSize: number }
}

/**
 * Writes one sequenced batch in one statement (one round trip while the head is locked): the records, the tree
 * nodes they completed, each issued manifest's audit_seq, the removal of the drained intake entries, and the new
 * head. A batch that only adds old records to the tree passes no records and no intake ids.
 */
export async function writeSequencedBatch(db: Queryable, batch: SequencedWrite): Promise<void> {
  const { records } = batch
  const issued = records.filter((r) => r.kind === 'manifest.issued' && r.manifest_id !== null)
  const [levels, indexes, hashes] = nodeArrays(batch.nodes)
  await db.query(
    `WITH records AS (
       INSERT INTO audit_records (${AUDIT_COLUMNS})
       SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::uuid[], $6::uuid[],
                            $7::text[], $8::text[], $9::text[], $10::jsonb[], $11::text[], $12::text[])
     ), nodes AS (
       INSERT INTO merkle_nodes (level, idx, hash)
       SELECT * FROM unnest($13::smallint[], $14::bigint[], $15::bytea[])
     ), placed AS (
       UPDATE manifests m SET audit_seq = p.seq
       FROM unnest($16::uuid[], $17::bigint[]) AS p(id, seq)
       WHERE m.id = p.id AND m.audit_seq IS NULL
     ), drained AS (
       DELETE FROM audit_intake WHERE id = ANY($18::bigint[])
     )
     UPDATE audit_head SET seq = $19, hash = $20, tree_size = $21`,
    [
      records.map((r) => r.seq),
      records.map((r) => r.at),
      records.map((r) => r.kind),
      records.map((r) => r.actor),
      records.map((r) => r.outcome_id),
      records.map((r) => r.manifest_id),
      records.map((r) => r.subagent_id),
      records.map((r) => r.orchestrator_id),
      records.map((r) => r.verdict),
      records.map((r) => JSON.stringify(r.data)),
      records.map((r) => r.prev_hash),
      records.map((r) => r.hash),
      levels,
      indexes,
      hashes,
      issued.map((r) => r.manifest_id),
      issued.map((r) => r.seq),
      batch.drainedIntakeIds,
      batch.head.seq,
      batch.head.hash,
      batch.head.treeSize,
    ],
  )
}
