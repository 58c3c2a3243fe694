import { isoText } from '../../db/iso-text.ts'
import { named, type Statement, statement } from '../../db/statement.ts'
import type { SealedAuditRecord } from '../core/records.ts'
import type { StoredNode } from '../core/transparency.ts'
import type { IntakeRow } from './intake.ts'
import { nodeArrays } from './merkle-nodes.ts'
import { AUDIT_COLUMNS, type AuditHeadRow } from './records.ts'

export interface SequencedWrite {
  /** The records, each with its canonical text (stored beside it, for verification to hash as stored). */
  records: readonly SealedAuditRecord[]
  nodes: readonly StoredNode[]
  /** The intake entries the records were made from: removed in the same statement. */
  drainedIntakeIds: readonly number[]
  head: { seq: number; hash: string; treeSize: number }
}

/** The columns of a record as the batch's write reads them from its JSON array. */
const RECORD_FIELDS = `seq bigint, at timestamptz, kind text, actor text, outcome_id uuid, manifest_id uuid, subagent_id text,
  orchestrator_id text, verdict text, data jsonb, prev_hash text, hash text, canonical text`

/** What a batch's write is allowed to extend: the head it was computed from, and whose lease it runs under. */
export interface BatchFence {
  /** The log's head the batch extends: nothing is written unless the head is still this one. */
  from: { seq: number; hash: string; treeSize: number }
  /**
   * The sequencer lease holder writing it: the write renews the lease, and writes nothing unless the holder still
   * has it (or it expired and nobody took it). Null for a tool that extends the log with no sequencer of its own
   * (the bench's synthetic history, migration tests): only the head is checked, and no intake entry may be drained.
   */
  holder: string | null
  /** How long the renewed lease lasts. */
  ttlMs: number
}

/** What became of a batch's write: written, or nothing written because the lease or the head changed hands. */
export type BatchWriteOutcome = 'written' | 'lease lost' | 'head moved'

/**
 * The write of one sequenced batch (what it did: `batchWriteOutcome`) in one statement, which commits on its own
 * (one round trip, no transaction held open across the sequencer's work; prepared once per connection, so
 * PostgreSQL does not plan it for every batch): the records (each with its canonical text, what its hash covers, for verification to hash as stored),
 * the tree nodes they completed, each issued manifest's audit_seq, the removal of the drained intake entries, and
 * the new head. Fenced: it first renews `fence.holder`'s lease (taking the lease row's lock until it commits, so
 * the lease cannot change hands meanwhile) and moves the head only from `fence.from` (a head another writer moved
 * is re-read after its commit and no longer matches); everything else it writes only once the head moved. So a
 * holder that lost its lease without noticing, or computed its batch from a head that is gone, writes nothing:
 * no seq is given twice or skipped. The lease's part also marks the statement as the sequencer's, the one writer
 * allowed to remove intake entries. A batch that only adds old records to the tree passes no records and no
 * intake ids.
 */
export function sequencedBatchWrite(batch: SequencedWrite, fence: BatchFence): Statement<BatchWriteRow> {
  const { records } = batch
  const issued = records.filter((r) => r.kind === 'manifest.issued' && r.manifest_id !== null)
  const [levels, indexes, hashes] = nodeArrays(batch.nodes)
  return named(
    `WITH lease AS (
       UPDATE sequencer_lease SET holder = $11, expires_at = clock_timestamp() + $12 * interval '1 millisecond'
       WHERE id AND $11::uuid IS NOT NULL AND (holder = $11 OR expires_at < clock_timestamp())
       RETURNING set_config('arbiter.sequencer', 'on', true)
     ), fence AS (
       SELECT $11::uuid IS NULL OR EXISTS (SELECT 1 FROM lease) AS leased
     ), head AS (
       UPDATE audit_head SET seq = $8, hash = $9, tree_size = $10
       WHERE seq = $13 AND hash = $14 AND tree_size = $15 AND (SELECT leased FROM fence)
       RETURNING seq
     ), records AS (
       INSERT INTO audit_records (${AUDIT_COLUMNS}, canonical)
       SELECT ${AUDIT_COLUMNS}, canonical FROM json_to_recordset($1::json) AS r(${RECORD_FIELDS})
       WHERE EXISTS (SELECT 1 FROM head)
     ), nodes AS (
       INSERT INTO merkle_nodes (level, idx, hash)
       SELECT * FROM unnest($2::smallint[], $3::bigint[], $4::bytea[]) WHERE EXISTS (SELECT 1 FROM head)
     ), placed AS (
       UPDATE manifests m SET audit_seq = p.seq
       FROM unnest($5::uuid[], $6::bigint[]) AS p(id, seq)
       WHERE m.id = p.id AND m.audit_seq IS NULL AND EXISTS (SELECT 1 FROM head)
     ), drained AS (
       DELETE FROM audit_intake WHERE id = ANY($7::bigint[]) AND EXISTS (SELECT 1 FROM head)
     )
     SELECT (SELECT leased FROM fence) AS leased, EXISTS (SELECT 1 FROM head) AS written`,
    [
      // The records as one JSON array (their canonical texts among their fields): one parameter sent as it is,
      // where an array per column had every canonical text and every data document escaped element by element.
      JSON.stringify(records),
      levels,
      indexes,
      hashes,
      issued.map((r) => r.manifest_id),
      issued.map((r) => r.seq),
      batch.drainedIntakeIds,
      batch.head.seq,
      batch.head.hash,
      batch.head.treeSize,
      fence.holder,
      fence.ttlMs,
      fence.from.seq,
      fence.from.hash,
      fence.from.treeSize,
    ],
  )
}

/** The one row of `sequencedBatchWrite`: whether the lease was held, and whether the batch was written. */
export interface BatchWriteRow {
  leased: boolean
  written: boolean
}

export function batchWriteOutcome(row: BatchWriteRow): BatchWriteOutcome {
  return row.written ? 'written' : row.leased ? 'head moved' : 'lease lost'
}

export interface OpenedBatch {
  /** The head, or null when `holder` does not hold the lease. */
  head: AuditHeadRow | null
  /** The oldest committed intake entries, at most `limit`, with `at` already in the API's RFC 3339 form. */
  entries: (Omit<IntakeRow, 'at'> & { at: string })[]
}

/**
 * What the sequencer's next batch starts from (`openedBatch` of what it returns), in one round trip and without a transaction kept open: the lease
 * (renewed, or taken when it expired), the log's head and the next intake entries. The tree's right edge is not
 * read here: the sequencer keeps the one at the head it last read or wrote, and reads it (`readNodes` of
 * `rootNodes`) only when the head is another. Nothing is locked: the batch's write (`sequencedBatchWrite`)
 * checks again that the lease and the head are still these. Two statements sent as one simple-protocol query, so the values
 * are inlined: `holder` is this process's own UUID and the numbers are integers, checked here.
 */
export function sequencerBatchRead(holder: string, ttlMs: number, limit: number): Statement {
  if (!/^[0-9a-f-]{36}$/.test(holder) || !Number.isSafeInteger(ttlMs) || !Number.isSafeInteger(limit)) {
    throw new Error('invalid sequencer batch parameters')
  }
  return statement(
    `WITH lease AS (
       UPDATE sequencer_lease SET holder = '${holder}', expires_at = clock_timestamp() + interval '${ttlMs} milliseconds'
       WHERE id AND (holder = '${holder}' OR expires_at < clock_timestamp()) RETURNING holder
     )
     SELECT seq, hash, tree_size FROM audit_head WHERE EXISTS (SELECT 1 FROM lease);
     SELECT id, ${isoText('at')} AS at, kind, actor, outcome_id,
            manifest_id, subagent_id, orchestrator_id, verdict, data
     FROM audit_intake ORDER BY id LIMIT ${limit}`,
  )
}

/** What `sequencerBatchRead` read: its two statements' results, in order. */
export function openedBatch(results: unknown): OpenedBatch {
  const [heads, entries] = results as [{ rows: unknown[] }, { rows: unknown[] }]
  const head = (heads.rows[0] as AuditHeadRow | undefined) ?? null
  return { head, entries: entries.rows as OpenedBatch['entries'] }
}
