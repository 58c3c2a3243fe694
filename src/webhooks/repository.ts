import type { EscalationListRow } from '../db/repositories/escalations.ts'
import { named, type Statement, statement } from '../db/statement.ts'
import type {
  WEBHOOK_TEST_EVENT,
  WebhookDeliveryStatus,
  WebhookDisabledReason,
  WebhookEventType,
} from '../domain/webhooks/vocabulary.ts'

/**
 * What a webhook's deliveries may be filtered on; each member, when set, must equal the manifest's (the words of
 * the registered case kinds, checked by the routes' schema).
 */
export interface WebhookFilter {
  kind?: string | undefined
  subagent_id?: string | undefined
  verdict?: string | undefined
  directive?: string | undefined
  orchestrator_id?: string | undefined
}

/**
 * webhooks (migration 011): id; list_seq (registration order, for cursors); url; events (what it subscribes to);
 * filter; description; secret (current) and previous_secret, which signs too until previous_secret_expires_at;
 * created_at; updated_at; disabled_at and disabled_reason (null while enabled); failing_since (the first failed
 * attempt since the last success).
 */
export interface WebhookRow {
  id: string
  list_seq: number
  url: string
  events: WebhookEventType[]
  filter: WebhookFilter
  description: string | null
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: Date | null
  created_at: Date
  updated_at: Date
  disabled_at: Date | null
  disabled_reason: WebhookDisabledReason | null
  failing_since: Date | null
}

const WEBHOOK_COLUMNS = `id, list_seq, url, events, filter, description, secret, previous_secret,
  previous_secret_expires_at, created_at, updated_at, disabled_at, disabled_reason, failing_since`

export function webhookInsert(
  row: Pick<WebhookRow, 'id' | 'url' | 'events' | 'filter' | 'description' | 'secret' | 'created_at'>,
): Statement<WebhookRow> {
  return statement(
    `INSERT INTO webhooks (id, url, events, filter, description, secret, created_at, updated_at)
     VALUES ($1, $2, $3::text[], $4::jsonb, $5, $6, $7, $7)
     RETURNING ${WEBHOOK_COLUMNS}`,
    [row.id, row.url, row.events, JSON.stringify(row.filter), row.description, row.secret, row.created_at],
  )
}

export function webhookById(id: string): Statement<WebhookRow> {
  return statement(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1`, [id])
}

/**
 * The webhook, locked against other changes until the transaction ends (no row when unknown). The lock leaves its
 * key alone, so decisions committing meanwhile still enqueue deliveries for it (they lock it FOR KEY SHARE).
 */
export function webhookLock(id: string): Statement<WebhookRow> {
  return statement(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1 FOR NO KEY UPDATE`, [id])
}

/**
 * The webhook, locked for its deletion (no row when unknown): a decision committing meanwhile waits for the
 * deletion and then leaves the webhook out, never referencing a deleted one.
 */
export function webhookLockForDelete(id: string): Statement<WebhookRow> {
  return statement(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1 FOR UPDATE`, [id])
}

/** A page of webhooks in registration order. Their rows are small, so `limit` bounds the page's bytes too. */
export function webhooksPage(afterSeq: number | null, limit: number): Statement<WebhookRow> {
  return statement(
    `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE list_seq > coalesce($1::bigint, 0) ORDER BY list_seq LIMIT $2`,
    [afterSeq, limit],
  )
}

/** Writes the fields an update may change. */
export function webhookUpdate(
  row: Pick<
    WebhookRow,
    | 'id'
    | 'url'
    | 'events'
    | 'filter'
    | 'description'
    | 'disabled_at'
    | 'disabled_reason'
    | 'failing_since'
    | 'updated_at'
  >,
): Statement<WebhookRow> {
  return statement(
    `UPDATE webhooks SET url = $2, events = $3::text[], filter = $4::jsonb, description = $5, disabled_at = $6,
       disabled_reason = $7, failing_since = $8, updated_at = $9
     WHERE id = $1
     RETURNING ${WEBHOOK_COLUMNS}`,
    [
      row.id,
      row.url,
      row.events,
      JSON.stringify(row.filter),
      row.description,
      row.disabled_at,
      row.disabled_reason,
      row.failing_since,
      row.updated_at,
    ],
  )
}

/** The current secret becomes the previous one, which signs too until `previousExpiresAt`. */
export function webhookSecretRotation(
  id: string,
  secret: string,
  previousExpiresAt: Date,
  at: Date,
): Statement<WebhookRow> {
  return statement(
    `UPDATE webhooks SET previous_secret = secret, previous_secret_expires_at = $3, secret = $2, updated_at = $4
     WHERE id = $1
     RETURNING ${WEBHOOK_COLUMNS}`,
    [id, secret, previousExpiresAt, at],
  )
}

/** Deletes up to `limit` of a webhook's deliveries (before the webhook itself, a batch at a time). */
export function webhookDeliveriesDelete(webhookId: string, limit: number): Statement<{ deleted: number }> {
  return statement(
    `WITH gone AS (
       DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries WHERE webhook_id = $1 LIMIT $2)
       RETURNING 1)
     SELECT count(*)::int AS deleted FROM gone`,
    [webhookId, limit],
  )
}

/** Deletes the webhook; the deliveries it has left go with it (ON DELETE CASCADE). */
export function webhookDelete(id: string): Statement {
  return statement('DELETE FROM webhooks WHERE id = $1', [id])
}

/**
 * What failing a pending delivery with its disabled webhook sets: failed, no lease. One with an attempt in flight
 * keeps its lease deadline as next_attempt_at, so that a redelivery does not start a second attempt before that
 * one has ended (its answer is dropped: the lease token is gone).
 */
const DISABLED_DELIVERY_FAIL = `status = 'failed', lease_token = NULL,
  next_attempt_at = CASE WHEN d.lease_token IS NOT NULL AND d.next_attempt_at > now() THEN d.next_attempt_at END`

/**
 * Marks the pending deliveries of a webhook that was just disabled as failed: a disabled webhook is not called,
 * and a delivery left pending would count as pending for ever. Redeliver sends one again.
 */
export function pendingDeliveriesFail(webhookId: string, reason: string): Statement {
  return statement(
    `UPDATE webhook_deliveries d SET ${DISABLED_DELIVERY_FAIL}, last_error = $2
     WHERE d.webhook_id = $1 AND d.status = 'pending'`,
    [webhookId, reason],
  )
}

/**
 * Fails up to `limit` pending deliveries of disabled webhooks. A decision committing while its webhook is being
 * disabled stores its delivery after the disabling failed the pending ones (decisions do not wait for a disable);
 * this sweep, after each disable and in the worker's maintenance pass, settles such a delivery.
 */
export function disabledPendingDeliveriesFail(limit: number): Statement<{ failed: number }> {
  return named(
    `WITH doomed AS (
       SELECT d.id FROM webhooks w
       JOIN webhook_deliveries d ON d.webhook_id = w.id AND d.status = 'pending'
       WHERE w.disabled_at IS NOT NULL
       LIMIT $1
       FOR UPDATE OF d SKIP LOCKED),
     failed AS (
       UPDATE webhook_deliveries d SET ${DISABLED_DELIVERY_FAIL}, last_error = 'webhook disabled'
       FROM doomed WHERE d.id = doomed.id AND d.status = 'pending'
       RETURNING 1)
     SELECT count(*)::int AS failed FROM failed`,
    [limit],
  )
}

/**
 * webhook_deliveries (migration 011): id; list_seq; webhook_id; event_id; status; attempts (made so far);
 * next_attempt_at (when due; while an attempt is in flight, its lease deadline; null once settled, but for one
 * failed with its disabled webhook mid-attempt, which keeps that deadline); lease_token
 * (the attempt in flight); last_status_code, last_error, last_attempt_at (the latest attempt's answer); created_at;
 * retry_from (where the maximum age is counted from). Joined with its event: type.
 */
export interface DeliveryRow {
  id: string
  list_seq: number
  webhook_id: string
  event_id: string
  type: WebhookEventType | typeof WEBHOOK_TEST_EVENT
  status: WebhookDeliveryStatus
  attempts: number
  next_attempt_at: Date | null
  last_status_code: number | null
  last_error: string | null
  last_attempt_at: Date | null
  created_at: Date
}

const DELIVERY_COLUMNS = `d.id, d.list_seq, d.webhook_id, d.event_id, e.type, d.status, d.attempts,
  d.next_attempt_at, d.last_status_code, d.last_error, d.last_attempt_at, d.created_at`

/**
 * A page of a webhook's deliveries, newest first: a deliveries log is read from its latest entry, and the next
 * page continues backwards from `beforeSeq`. Their rows are small, so `limit` bounds the page's bytes too.
 */
export function deliveriesPage(
  webhookId: string,
  filter: { status?: WebhookDeliveryStatus | undefined; beforeSeq: number | null },
  limit: number,
): Statement<DeliveryRow> {
  return statement(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
     WHERE d.webhook_id = $1 AND ($2::text IS NULL OR d.status = $2) AND ($3::bigint IS NULL OR d.list_seq < $3)
     ORDER BY d.list_seq DESC LIMIT $4`,
    [webhookId, filter.status ?? null, filter.beforeSeq, limit],
  )
}

export function deliveryById(webhookId: string, deliveryId: string): Statement<DeliveryRow> {
  return statement(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
     WHERE d.webhook_id = $1 AND d.id = $2`,
    [webhookId, deliveryId],
  )
}

/**
 * Makes a delivery due now, whatever its status: a settled one is pending again, with its maximum age counted
 * from now. One with an attempt in flight keeps its lease deadline, so this never starts a second concurrent
 * attempt: that attempt's answer is recorded, and if it fails the next one follows the schedule. So does one
 * failed with its webhook's disabling while an attempt was in flight (it kept that lease's deadline). Nothing
 * when the webhook is disabled: its row is locked against a disabling meanwhile, which would leave this pending.
 */
export function deliveryRedeliver(webhookId: string, deliveryId: string): Statement<{ id: string }> {
  return statement(
    `WITH hook AS (SELECT id FROM webhooks WHERE id = $1 AND disabled_at IS NULL FOR SHARE)
     UPDATE webhook_deliveries d SET status = 'pending', retry_from = now(),
       next_attempt_at = CASE
         WHEN d.lease_token IS NOT NULL THEN d.next_attempt_at
         WHEN d.status = 'failed' AND d.next_attempt_at > now() THEN d.next_attempt_at
         ELSE now() END
     FROM hook WHERE d.webhook_id = hook.id AND d.id = $2
     RETURNING d.id`,
    [webhookId, deliveryId],
  )
}

/** Stores a `webhook.test` event and its one delivery, due now, and wakes the delivery workers. */
export function testEventInsert(webhookId: string, eventId: string, deliveryId: string): Statement {
  return statement(
    `WITH event AS (
       INSERT INTO webhook_events (id, type, webhook_id, created_at) VALUES ($2, 'webhook.test', $1, clock_timestamp())
       RETURNING id),
     delivery AS (
       INSERT INTO webhook_deliveries (id, webhook_id, event_id, status, next_attempt_at, created_at, retry_from)
       SELECT $3, $1, event.id, 'pending', now(), now(), now() FROM event
       RETURNING id)
     SELECT pg_notify('arbiter_webhooks', '') FROM delivery`,
    [webhookId, eventId, deliveryId],
  )
}

/** Wakes the delivery workers of every replica (the triggers that store events do the same). */
export function deliveryWorkersWake(): Statement {
  return statement(`SELECT pg_notify('arbiter_webhooks', '')`)
}

/** Whether any webhook is enabled: while none is, nothing can be due. */
export function enabledWebhookExists(): Statement<{ enabled: boolean }> {
  return named('SELECT EXISTS (SELECT 1 FROM webhooks WHERE disabled_at IS NULL) AS enabled', [])
}

/** A delivery claimed by this replica for one attempt, with what the attempt needs. */
export interface ClaimedDelivery {
  id: string
  webhook_id: string
  event_id: string
  attempts: number
  lease_token: string
  /** Milliseconds since retry_from, by the database's clock. */
  age_ms: number
  event_type: string
  event_created_at: Date
  manifest_id: string | null
  case_kind: string | null
  case_id: string | null
  url: string
  secret: string
  /** The secret a rotation replaced, while it still signs. */
  previous_secret: string | null
}

/** Deliveries of one webhook leased at once across replicas: a receiver that hangs holds only these. */
export const LEASES_PER_WEBHOOK = 4

/**
 * Claims up to `limit` due deliveries of enabled webhooks for one attempt each: each gets a new lease token and
 * is not due again before `leaseMs` has passed. Rows another replica is claiming are skipped (SKIP LOCKED), and a
 * claimed row is not due until its lease passes, so one delivery has at most one attempt in flight across
 * replicas; a replica that dies mid-attempt delays the delivery by its lease, never loses it.
 *
 * A webhook has at most LEASES_PER_WEBHOOK deliveries leased: one whose receiver hangs keeps that many slots
 * busy, not all of them. A page takes each webhook's oldest due delivery first, then the second ones, and so on,
 * so one webhook's backlog does not starve the others. Webhooks another replica is claiming for are skipped (the
 * rows of webhooks with due deliveries are locked FOR NO KEY UPDATE, which decisions enqueuing deliveries do not
 * wait for), so two replicas cannot both fill one webhook's leases. Each webhook's due deliveries are read up to
 * its free leases, so a flood of pending deliveries costs no memory here.
 */
export function dueDeliveriesClaim(limit: number, leaseMs: number): Statement<ClaimedDelivery> {
  return named(
    `WITH hooks AS (
       SELECT w.id FROM webhooks w
       WHERE w.disabled_at IS NULL
         AND EXISTS (SELECT 1 FROM webhook_deliveries d
                     WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.next_attempt_at <= now())
       FOR NO KEY UPDATE SKIP LOCKED),
     candidates AS (
       SELECT d.id, d.webhook_id, d.next_attempt_at
       FROM hooks h
       CROSS JOIN LATERAL (
         SELECT d.id, d.webhook_id, d.next_attempt_at FROM webhook_deliveries d
         WHERE d.webhook_id = h.id AND d.status = 'pending' AND d.next_attempt_at <= now()
         ORDER BY d.next_attempt_at
         LIMIT greatest(0, $3::int - (
           SELECT count(*) FROM webhook_deliveries b
           WHERE b.webhook_id = h.id AND b.status = 'pending' AND b.lease_token IS NOT NULL
             AND b.next_attempt_at > now()))
         FOR UPDATE SKIP LOCKED) d),
     due AS (
       SELECT id FROM (
         SELECT id, next_attempt_at,
           row_number() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at) AS turn
         FROM candidates) ranked
       ORDER BY turn, next_attempt_at
       LIMIT $1),
     claimed AS (
       UPDATE webhook_deliveries d
       SET next_attempt_at = now() + $2::int * interval '1 millisecond', lease_token = gen_random_uuid()
       FROM due WHERE d.id = due.id
       RETURNING d.id, d.webhook_id, d.event_id, d.attempts, d.lease_token, d.retry_from)
     SELECT c.id, c.webhook_id, c.event_id, c.attempts, c.lease_token,
       (extract(epoch FROM now() - c.retry_from) * 1000)::float8 AS age_ms,
       e.type AS event_type, e.created_at AS event_created_at, e.manifest_id, e.case_kind, e.case_id,
       w.url,
       w.secret,
       CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END AS previous_secret
     FROM claimed c JOIN webhook_events e ON e.id = c.event_id JOIN webhooks w ON w.id = c.webhook_id`,
    [limit, leaseMs, LEASES_PER_WEBHOOK],
  )
}

/**
 * Gives a claimed delivery back unattempted, due now (when too little of its lease was left to attempt it within
 * the lease). Nothing when its lease is no longer this attempt's.
 */
export function leaseRelease(claimed: Pick<ClaimedDelivery, 'id' | 'lease_token'>): Statement {
  return named(
    `UPDATE webhook_deliveries SET lease_token = NULL, next_attempt_at = now()
     WHERE id = $1 AND lease_token = $2 AND status = 'pending'`,
    [claimed.id, claimed.lease_token],
  )
}

/** What an attempt came to, as stored. */
export interface AttemptResult {
  statusCode: number | null
  error: string | null
  /** pending: retry after delayMs; succeeded or failed: settled. */
  next: { status: 'pending'; delayMs: number } | { status: 'succeeded' | 'failed' }
}

/** One attempt's answer, to be recorded under the lease it was made with. */
export interface AttemptRecord {
  claimed: Pick<ClaimedDelivery, 'id' | 'lease_token'>
  result: AttemptResult
}

/**
 * Records a batch of attempts in one statement, each only if its lease is still the delivery's (else the delivery
 * was settled meanwhile, e.g. failed with its disabled webhook, or its lease passed and another attempt holds it:
 * that answer is dropped). Returns the deliveries recorded, each with whether its webhook is failing now (a
 * success then ends the streak; read here so that the common case, a healthy webhook, costs no statement more).
 */
export function attemptsRecord(
  attempts: readonly AttemptRecord[],
): Statement<{ id: string; lease_token: string; webhook_failing: boolean }> {
  return named(
    `UPDATE webhook_deliveries d SET
       attempts = d.attempts + 1, status = a.status, lease_token = NULL, last_status_code = a.status_code,
       last_error = a.error, last_attempt_at = now(),
       next_attempt_at = CASE WHEN a.status = 'pending' THEN now() + a.delay_ms * interval '1 millisecond' END
     FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::text[], $6::int[])
       AS a(id, lease_token, status, status_code, error, delay_ms)
     WHERE d.id = a.id AND d.lease_token = a.lease_token
     RETURNING d.id, a.lease_token,
       EXISTS (SELECT 1 FROM webhooks w WHERE w.id = d.webhook_id AND w.failing_since IS NOT NULL)
         AS webhook_failing`,
    [
      attempts.map((a) => a.claimed.id),
      attempts.map((a) => a.claimed.lease_token),
      attempts.map((a) => a.result.next.status),
      attempts.map((a) => a.result.statusCode),
      attempts.map((a) => a.result.error),
      attempts.map((a) => (a.result.next.status === 'pending' ? a.result.next.delayMs : 0)),
    ],
  )
}

/** A success clears the webhook's failing streak. */
export function webhookHealthy(webhookId: string): Statement {
  return named('UPDATE webhooks SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL', [
    webhookId,
  ])
}

/**
 * Once none of a webhook's deliveries is pending, its failing streak ends: a later failure starts a new one
 * rather than disabling it for failures long settled.
 */
export function webhookSettledStreakEnd(webhookId: string): Statement {
  return named(
    `UPDATE webhooks SET failing_since = NULL
     WHERE id = $1 AND failing_since IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'pending')`,
    [webhookId],
  )
}

/**
 * A failure starts the failing streak (if none) and says how long it has lasted, by the database's clock, and
 * whether the webhook is still enabled.
 */
export function webhookFailing(webhookId: string): Statement<{ failing_for_ms: number; enabled: boolean }> {
  return named(
    `UPDATE webhooks SET failing_since = coalesce(failing_since, now()) WHERE id = $1
     RETURNING (extract(epoch FROM now() - failing_since) * 1000)::float8 AS failing_for_ms,
       disabled_at IS NULL AS enabled`,
    [webhookId],
  )
}

/** Disables an enabled webhook (no row when it was already disabled or is gone). */
export function webhookDisable(webhookId: string, reason: WebhookDisabledReason): Statement<WebhookRow> {
  return statement(
    `UPDATE webhooks SET disabled_at = now(), disabled_reason = $2, updated_at = now()
     WHERE id = $1 AND disabled_at IS NULL
     RETURNING ${WEBHOOK_COLUMNS}`,
    [webhookId, reason],
  )
}

/** Pending deliveries and the age of the oldest, for /metrics. */
export function pendingDeliveriesSummary(): Statement<{
  pending: number
  oldest_age_seconds: number | null
}> {
  return statement(
    `SELECT count(*)::int AS pending, extract(epoch FROM now() - min(created_at))::float8 AS oldest_age_seconds
     FROM webhook_deliveries WHERE status = 'pending'`,
  )
}

/** The manifest envelopes the events of a claimed page name, each read once. */
export function eventManifests(manifestIds: readonly string[]): Statement<{
  id: string
  manifest_jcs: string
  manifest_digest: string
  jws: string
  audit_seq: number | null
}> {
  return named(
    'SELECT id, manifest_jcs, manifest_digest, jws, audit_seq FROM manifests WHERE id = ANY($1::uuid[])',
    [manifestIds],
  )
}

/** The escalations of cases, with their HALT manifest's text, as the escalation list reads them. */
export function eventEscalations(
  cases: readonly { case_kind: string; case_id: string }[],
): Statement<EscalationListRow> {
  return named(
    `SELECT e.case_kind, e.case_id, e.manifest_id, e.status, e.opened_at, e.resolved_at, e.resolution_manifest_id,
       e.list_seq, m.manifest_jcs
     FROM escalations e JOIN manifests m ON m.id = e.manifest_id
     JOIN unnest($1::text[], $2::uuid[]) AS c(case_kind, case_id) ON e.case_kind = c.case_kind AND e.case_id = c.case_id`,
    [cases.map((c) => c.case_kind), cases.map((c) => c.case_id)],
  )
}
