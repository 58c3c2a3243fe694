import { type Statement, statement } from '../../db/statement.ts'

/**
 * sequencer_lease: one row naming the replica that runs the sequencer. holder (a random id per process), expires_at
 * (by the database's clock, so replicas' clocks never matter). Time is always read with clock_timestamp(), not
 * now(), which inside a transaction would be the transaction's start.
 */

/**
 * Takes the lease, or extends it, for `ttlMs`: changes the row when `holder` has it already or it has expired, so
 * `holder` holds it when the statement changed one row. (A batch's read and its write renew it the same way: see
 * batches.ts.)
 */
export function sequencerLeaseClaim(holder: string, ttlMs: number): Statement {
  return statement(
    `UPDATE sequencer_lease SET holder = $1, expires_at = clock_timestamp() + $2 * interval '1 millisecond'
     WHERE id AND (holder = $1 OR expires_at < clock_timestamp())`,
    [holder, ttlMs],
  )
}

/** Gives the lease up at once (a graceful stop), so another replica takes over without waiting for expiry. */
export function sequencerLeaseRelease(holder: string): Statement {
  return statement(`UPDATE sequencer_lease SET expires_at = '-infinity' WHERE id AND holder = $1`, [holder])
}
