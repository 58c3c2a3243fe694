import type { Queryable } from '../db/pool.ts'
import { named, queryOne, type Statement } from '../db/statement.ts'
import { disabledPendingDeliveriesFail } from './repository.ts'

/**
 * Deletes up to `limit` settled deliveries (succeeded or failed) whose last activity — the last attempt, or the
 * creation or redelivery their age counts from — is more than `retentionMs` old. Pending deliveries are never
 * deleted. Rows another replica is deleting, or a redelivery is changing, are skipped (SKIP LOCKED).
 */
export function settledDeliveriesPrune(retentionMs: number, limit: number): Statement<{ deleted: number }> {
  return named(
    `WITH doomed AS (
       SELECT id FROM webhook_deliveries
       WHERE status <> 'pending'
         AND greatest(retry_from, last_attempt_at) < now() - $1::float8 * interval '1 millisecond'
       LIMIT $2
       FOR UPDATE SKIP LOCKED),
     gone AS (DELETE FROM webhook_deliveries d USING doomed WHERE d.id = doomed.id RETURNING 1)
     SELECT count(*)::int AS deleted FROM gone`,
    [retentionMs, limit],
  )
}

/**
 * Deletes up to `limit` events more than `retentionMs` old that no delivery refers to any more: their deliveries
 * were pruned, or went with their deleted webhook. A delivery is only ever stored with its event, so none can
 * come to refer to one of these.
 */
export function orphanEventsPrune(retentionMs: number, limit: number): Statement<{ deleted: number }> {
  return named(
    `WITH doomed AS (
       SELECT e.id FROM webhook_events e
       WHERE e.created_at < now() - $1::float8 * interval '1 millisecond'
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
       LIMIT $2
       FOR UPDATE SKIP LOCKED),
     gone AS (DELETE FROM webhook_events e USING doomed WHERE e.id = doomed.id RETURNING 1)
     SELECT count(*)::int AS deleted FROM gone`,
    [retentionMs, limit],
  )
}

/** Batches one pruning pass deletes at most of each kind: a backlog is worked off over passes, not in one. */
export const PRUNE_BATCHES_PER_PASS = 10

/**
 * One pruning pass: settled deliveries, then the events they leave, a batch of `batch` rows per statement.
 * Answers whether rows may be left (a batch came back full), so that the next pass comes soon.
 */
export async function pruneDeliveries(
  db: Queryable,
  retention: { retentionMs: number; batch: number },
): Promise<{ deleted: number; more: boolean }> {
  let deleted = 0
  for (const prune of [settledDeliveriesPrune, orphanEventsPrune]) {
    for (let pass = 0; ; pass++) {
      const { deleted: n } = await queryOne(db, prune(retention.retentionMs, retention.batch))
      deleted += n
      if (n < retention.batch) break
      if (pass + 1 === PRUNE_BATCHES_PER_PASS) return { deleted, more: true }
    }
  }
  return { deleted, more: false }
}

/** Rows one statement of the sweep of disabled webhooks' pending deliveries fails at most. */
const STRANDED_BATCH = 1_000

/**
 * Fails the pending deliveries of disabled webhooks, PRUNE_BATCHES_PER_PASS batches at most. Answers whether rows
 * may be left (the last batch came back full).
 */
export async function failStrandedDeliveries(db: Queryable): Promise<{ failed: number; more: boolean }> {
  let failed = 0
  for (let pass = 0; pass < PRUNE_BATCHES_PER_PASS; pass++) {
    const { failed: n } = await queryOne(db, disabledPendingDeliveriesFail(STRANDED_BATCH))
    failed += n
    if (n < STRANDED_BATCH) return { failed, more: false }
  }
  return { failed, more: true }
}
