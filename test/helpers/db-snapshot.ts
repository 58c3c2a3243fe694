import type { Queryable } from '../../src/db/pool.ts'

// Columns an accepted request may UPDATE in place (everything else is only ever inserted, which row counts see).
const MUTABLE = {
  outcomes: 'id, status, manifest_id, evidence_hash, reevaluation_rounds',
  fanouts: 'id, status, manifest_id, closed_at, claims_total, results_bytes, manifest_weight',
  api_keys: 'id, revoked_at',
  probes: 'id, version, probe_digest, definition',
  escalations: 'case_kind, case_id, status, resolution_manifest_id',
  probe_runs: 'case_kind, case_id, inputs_digest, claimed_until, record',
  manifests: 'id, audit_seq',
  reviews: 'id, revision, subject, status, manifest_id, manifest_revision, manifest_directive',
} as const

/**
 * A fingerprint of everything the service stores: the row count of every table, a digest of the columns that
 * change in place, and the audit chain head. Two equal snapshots mean nothing was written in between. Built
 * once per database (the table list is read from the catalog, so a new table is covered without edits).
 */
export async function databaseSnapshotter(db: Queryable): Promise<() => Promise<Record<string, string>>> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
  )
  const quote = (name: string) => `"${name.replace(/"/g, '""')}"`
  // Checkpoints are signed in the background whenever the log has grown: not a write of any request.
  const counts = rows
    .filter(({ name }) => name !== 'audit_checkpoints')
    .map(({ name }) => `(SELECT count(*) FROM ${quote(name)})::text AS ${quote(name)}`)
  const digests = Object.entries(MUTABLE)
    .filter(([table]) => rows.some((row) => row.name === table))
    .map(
      ([table, columns]) =>
        `(SELECT md5(coalesce(string_agg(row(${columns})::text, ',' ORDER BY row(${columns})::text), ''))
          FROM ${quote(table)}) AS ${quote(`${table} digest`)}`,
    )
  const sql = `SELECT ${[...counts, ...digests].join(', ')},
    (SELECT seq::text || ':' || hash FROM audit_head) AS "audit head"`
  // Audit entries committed before the snapshot are sequenced in the background; wait until the intake is drained
  // so that the sequencer's work is never mistaken for a write of the request under test.
  return async () => {
    for (let waited = 0; waited < 10_000; waited += 10) {
      const { rows: pending } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_intake')
      if (pending[0]!.n === 0) break
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return (await db.query<Record<string, string>>(sql)).rows[0]!
  }
}
