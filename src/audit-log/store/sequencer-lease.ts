import type { Queryable } from '../../db/pool.ts'

/**
 * sequencer_lease: one row naming the replica that runs the sequencer. holder (a random id per process), expires_at
 * (by the database's clock, so replicas' clocks never matter). Time is always read with clock_timestamp(), not
 * now(), which inside a transaction would be the transaction's start.
 */

/**
 * Takes the lease, or extends it, for `ttlMs`: succeeds when `holder` has it already or it has expired. Returns
 * whether `holder` holds it now. (A batch's read and its write renew it the same way: see log-batches.ts.)
 */
export async function claimSequencerLease(db: Queryable, holder: string, ttlMs: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE sequencer_lease SET holder = $1, expires_at = clock_timestamp() + $2 * interval '1 millisecond'
     WHERE id AND (holder = $1 OR expires_at < clock_timestamp())`,
    [holder, ttlMs],
  )
  return rowCount === 1
}

/** Gives the lease up at once (a graceful stop), so another replica takes over without waiting for expiry. */
export async function releaseSequencerLease(db: Queryable, holder: string): Promise<void> {
  await db.query(`UPDATE sequencer_lease SET expires_at = '-infinity' WHERE id AND holder = $1`, [holder])
}

export async function readSequencerLease(
  db: Queryable,
): Promise<{ holder: string | null; expires_in_ms: number }> {
  const { rows } = await db.query<{ holder: string | null; expires_in_ms: number }>(
    `SELECT holder, GREATEST(-1, EXTRACT(EPOCH FROM expires_at - clock_timestamp()) * 1000)::float8 AS expires_in_ms
     FROM sequencer_lease`,
  )
  return rows[0]!
}
