import { AUDIT_COLUMNS, type AuditHeadRow } from '../../audit/repository.ts'
import type { SealedAuditRecord } from '../../domain/shared/audit-chain.ts'
import type { StoredNode } from '../../log/transparency.ts'
import { isoText } from '../iso-text.ts'
import type { Queryable } from '../pool.ts'
import { named } from '../statement.ts'
import type { IntakeRow } from './audit-intake.ts'
import { nodeArrays } from './merkle-nodes.ts'

export interface SequencedWrite {
  /** The records, each with its canonical text (stored beside it, for verification to hash as stored). */
  records: readonly SealedAuditRecord[]
  nodes: readonly StoredNode[]
  /** The intake entries the records were made from: removed in the same statement. */
  drainedIntakeIds: readonly number[]
  head: { seq: number; hash: string; treeSize: number }
}

/**
 * Writes one sequenced batch in one statement (one round trip while the head is locked; prepared once per
 * connection, so PostgreSQL does not plan it for every batch): the records (each with its canonical text, what
 * its hash covers, for verification to hash as stored), the tree nodes they completed, each issued manifest's
 * audit_seq, the removal of the drained intake entries, and the new head. A batch that only adds old records to
 * the tree passes no records and no intake ids.
 */
export async function writeSequencedBatch(db: Queryable, batch: SequencedWrite): Promise<void> {
  const { records } = batch
  const issued = records.filter((r) => r.kind === 'manifest.issued' && r.manifest_id !== null)
  const [levels, indexes, hashes] = nodeArrays(batch.nodes)
  await db.query(
    named(
      `WITH records AS (
       INSERT INTO audit_records (${AUDIT_COLUMNS}, canonical)
       SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::uuid[], $6::uuid[],
                            $7::text[], $8::text[], $9::text[], $10::jsonb[], $11::text[], $12::text[], $22::text[])
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
        records.map((r) => r.canonical),
      ],
    ),
  )
}

export interface OpenedBatch {
  /** The locked head, or null when `holder` does not hold the lease (the transaction then changes nothing). */
  head: AuditHeadRow | null
  /** The oldest committed intake entries, at most `limit`, with `at` already in the API's RFC 3339 form. */
  entries: (Omit<IntakeRow, 'at'> & { at: string })[]
}

/**
 * Opens a sequencer batch in one round trip: BEGIN, the sequencer mark, the lease re-check (renewing it, and
 * locking its row until the batch ends — fencing), the head lock and the next intake entries. The tree's right
 * edge is not read here: the sequencer keeps the one at the head it last locked or wrote, and reads it
 * (`readNodes` of `rootNodes`) only when the locked head is another. With `commitFirst`, the same round trip
 * first commits the batch the connection has written (the previous batch's COMMIT and this one's opening travel
 * together). Sent as one simple-protocol query, so the values are inlined: `holder` is this process's own UUID
 * and the numbers are integers, checked here. Should the query fail, whether a `commitFirst` batch committed is
 * unknown; the log is consistent either way (its entries stay in the intake until a committed batch removes them).
 */
export async function openSequencerBatch(
  client: Queryable,
  holder: string,
  ttlMs: number,
  limit: number,
  commitFirst = false,
): Promise<OpenedBatch> {
  if (!/^[0-9a-f-]{36}$/.test(holder) || !Number.isSafeInteger(ttlMs) || !Number.isSafeInteger(limit)) {
    throw new Error('invalid sequencer batch parameters')
  }
  const results = (await client.query(
    `${commitFirst ? 'COMMIT;' : ''}BEGIN;
     SET LOCAL arbiter.sequencer = 'on';
     WITH lease AS (
       UPDATE sequencer_lease SET holder = '${holder}', expires_at = clock_timestamp() + interval '${ttlMs} milliseconds'
       WHERE id AND (holder = '${holder}' OR expires_at < clock_timestamp()) RETURNING holder
     )
     SELECT seq, hash, tree_size FROM audit_head WHERE EXISTS (SELECT 1 FROM lease) FOR UPDATE;
     SELECT id, ${isoText('at')} AS at, kind, actor, outcome_id,
            manifest_id, subagent_id, orchestrator_id, verdict, data
     FROM audit_intake ORDER BY id LIMIT ${limit}`,
  )) as unknown as { rows: unknown[] }[]
  // The last two results: the head, the entries.
  const [heads, entries] = results.slice(-2) as [{ rows: unknown[] }, { rows: unknown[] }]
  const head = (heads.rows[0] as AuditHeadRow | undefined) ?? null
  return { head, entries: entries.rows as OpenedBatch['entries'] }
}
