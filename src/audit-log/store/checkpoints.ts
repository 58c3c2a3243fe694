import { type Statement, statement } from '../../db/statement.ts'
import type { StoredCheckpoint } from '../core/checkpoint.ts'
import type { NodeId } from '../core/transparency.ts'

/**
 * audit_checkpoints: every signed checkpoint, one per tree size. tree_size; checkpoint_jcs (the checkpoint JSON
 * exactly as the JWS signs it); note (the C2SP signed note); jws; created_at (not read).
 */
export type CheckpointRow = StoredCheckpoint

const COLUMNS = 'tree_size, checkpoint_jcs, note, jws'

/**
 * Stores a checkpoint unless one of that size exists (replicas may sign the same size at once), and returns the
 * stored one: every reader sees one checkpoint per size. No row when another replica inserted that size after
 * this statement's snapshot was taken: its row is committed by then (the insert waited for it), and a new
 * statement (`checkpointOfSize`) sees it.
 */
export function checkpointInsertIfAbsent(row: CheckpointRow): Statement<CheckpointRow> {
  return statement(
    `WITH inserted AS (
       INSERT INTO audit_checkpoints (${COLUMNS}) VALUES ($1, $2, $3, $4)
       ON CONFLICT (tree_size) DO NOTHING RETURNING ${COLUMNS}
     )
     SELECT ${COLUMNS} FROM inserted
     UNION ALL SELECT ${COLUMNS} FROM audit_checkpoints WHERE tree_size = $1 AND NOT EXISTS (SELECT 1 FROM inserted)`,
    [row.tree_size, row.checkpoint_jcs, row.note, row.jws],
  )
}

export function checkpointOfSize(treeSize: number): Statement<CheckpointRow> {
  return statement(`SELECT ${COLUMNS} FROM audit_checkpoints WHERE tree_size = $1`, [treeSize])
}

/** Checkpoints with fromSize <= tree_size <= toSize, ascending (the verifier checks them in log order). */
export function checkpointsBetween(fromSize: number, toSize: number): Statement<CheckpointRow> {
  return statement(
    `SELECT ${COLUMNS} FROM audit_checkpoints WHERE tree_size BETWEEN $1 AND $2 ORDER BY tree_size`,
    [fromSize, toSize],
  )
}

/** The log head, its latest checkpoint and, when asked for, the checkpoint of one size. */
export interface LogState {
  head: { seq: number; hash: string; tree_size: number }
  latest: CheckpointRow | undefined
  /** The checkpoint of the size asked for (undefined when none is stored, or none was asked for). */
  atSize: CheckpointRow | undefined
  /** The hashes of the tree nodes asked for, keyed by `nodeKey` (`level:idx`); missing nodes are absent. */
  nodes: Map<string, Uint8Array>
}

/** The row of `logStateQuery`. */
export interface LogStateRow {
  seq: number
  hash: string
  head_tree_size: number
  latest: CheckpointRow | null
  at_size: CheckpointRow | null
  /** [level, idx, base64 hash] of each node asked for that is stored. */
  nodes: [number, number, string][]
}

/**
 * The statement of the log's state (see LogState; `atSize` null: no checkpoint of a given size; `nodes`: tree
 * nodes a proof will need, when they are known before the head is read), one row: what a checkpoint or proof
 * request reads first, alone or with the sequencing state (VerifiableLog.readYourWrites).
 */
export function logStateQuery(atSize: number | null, nodes: readonly NodeId[] = []): Statement<LogStateRow> {
  return statement(
    `SELECT h.seq, h.hash, h.tree_size AS head_tree_size,
       (SELECT json_build_object(${JSON_COLUMNS}) FROM audit_checkpoints ORDER BY tree_size DESC LIMIT 1) AS latest,
       (SELECT json_build_object(${JSON_COLUMNS}) FROM audit_checkpoints WHERE tree_size = $1::bigint) AS at_size,
       (SELECT coalesce(json_agg(json_build_array(n.level, n.idx, encode(n.hash, 'base64'))), '[]')
        FROM merkle_nodes n JOIN unnest($2::smallint[], $3::bigint[]) AS wanted(level, idx)
          ON n.level = wanted.level AND n.idx = wanted.idx) AS nodes
     FROM audit_head h`,
    [atSize, nodes.map((node) => node.level), nodes.map((node) => node.index)],
  )
}

const JSON_COLUMNS = COLUMNS.split(', ')
  .map((column) => `'${column}', ${column}`)
  .join(', ')

export function logStateFromRow(row: LogStateRow): LogState {
  return {
    head: { seq: row.seq, hash: row.hash, tree_size: row.head_tree_size },
    latest: row.latest ?? undefined,
    atSize: row.at_size ?? undefined,
    nodes: new Map(row.nodes.map(([level, idx, hash]) => [`${level}:${idx}`, Buffer.from(hash, 'base64')])),
  }
}
