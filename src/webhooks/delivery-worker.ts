import pg from 'pg'
import { appendAuditRecords } from '../audit-log/append.ts'
import { type Pool, typeParsers, withTransaction } from '../db/pool.ts'
import { queryFirst, queryOne, queryRows, runStatement } from '../db/statement.ts'
import { classifyStatus, nextAfterFailure } from '../domain/webhooks/retry-schedule.ts'
import { webhookHeaders } from '../domain/webhooks/signature.ts'
import type { WebhookDisabledReason } from '../domain/webhooks/vocabulary.ts'
import {
  checkRequestUrl,
  createGuardedDispatcher,
  type HostLookup,
  loadUndici,
  type SsrfPolicy,
} from '../probes/ssrf-guard.ts'
import { AttemptRecorder } from './attempt-recorder.ts'
import { eventBodies, type ShowEscalation } from './payload.ts'
import {
  type AttemptResult,
  type ClaimedDelivery,
  dueDeliveriesClaim,
  enabledWebhookExists,
  leaseRelease,
  pendingDeliveriesFail,
  webhookDisable,
  webhookFailing,
  webhookHealthy,
  webhookSettledStreakEnd,
} from './repository.ts'
import { failStrandedDeliveries, pruneDeliveries } from './retention.ts'

export interface WebhookDeliverySettings {
  /** The SSRF guard every attempt passes (URL, then every address a name resolves to, then the socket). */
  policy: SsrfPolicy
  /** A delivery still failing this long after it was created is `failed` (ARBITER_WEBHOOK_MAX_AGE_HOURS). */
  maxAgeMs: number
  /** A webhook whose attempts have all failed for this long is disabled (ARBITER_WEBHOOK_DISABLE_AFTER_HOURS). */
  disableAfterMs: number
  /** Delays after the 1st, 2nd, … failure, the last repeated (src/domain/webhooks/retry-schedule.ts). */
  retryScheduleMs: readonly number[]
  /** One attempt, connection to the end of the read body, takes at most this (10 s). */
  attemptTimeoutMs: number
  /**
   * A claimed delivery is not due again before this has passed. An attempt ends a margin before its lease does
   * (leaseMarginMs), and one whose lease has less than half an attempt timeout left is not made: building its
   * body may have waited long for a connection.
   */
  leaseMs: number
  /**
   * How often due deliveries are looked for when nothing wakes the worker, while a webhook is enabled. While none
   * is, a worker that is sure to be woken when one is (listening, or on a database serving this process alone)
   * sends no query at all.
   */
  pollMs: number
  /** How often an idle worker (no webhook enabled) looks again anyway. */
  idleCheckMs: number
  /** Attempts in flight at once on this replica. */
  concurrency: number
  /** On PostgreSQL: LISTEN for new deliveries on a connection of its own (the embedded database is polled). */
  listenConnectionString?: string | undefined
  /** The database serves this process alone: creating or enabling a webhook wakes this worker (`wake()`). */
  soleProcess?: boolean | undefined
  /** Settled deliveries older than this are deleted, and the events left without deliveries. */
  retentionMs: number
  /** How often pruning runs (sooner while a backlog is left), and the rows one statement deletes at most. */
  pruneIntervalMs: number
  pruneBatch: number
  /** Resolves host names for the SSRF guard (tests); default the system's resolver. */
  lookup?: HostLookup | undefined
  /** An escalation event's data: the escalation as `GET /v1/escalations` lists it. */
  showEscalation: ShowEscalation
}

/**
 * How long before its lease ends an attempt is aborted: its result must be recorded, and the lease counted from
 * when the claim was sent, before another replica may take the delivery over.
 */
export function leaseMarginMs(leaseMs: number): number {
  return Math.min(5_000, leaseMs / 10)
}

/** A claim follows the last one after at least this, while attempts are in flight (see #claimPause). */
const CLAIM_GAP_MS = 10

/** The receiver's answer is read up to this and discarded. */
export const RESPONSE_BODY_LIMIT = 64 * 1024

/** What /metrics counts of the deliveries; the plugin registers it. */
export interface WebhookDeliveryObserver {
  attempt(result: AttemptOutcome, durationSeconds: number): void
  settled(status: 'succeeded' | 'failed'): void
}

export type AttemptOutcome = 'success' | 'http_error' | 'gone' | 'network_error' | 'timeout' | 'blocked'

interface Exchange {
  outcome: AttemptOutcome
  statusCode: number | null
  error: string | null
}

/**
 * Delivers the pending deliveries stored in the database, on every replica: each claims a page of due ones (a
 * lease per delivery, so no two replicas attempt one at the same time), attempts each once, and records the
 * answer. It wakes on PostgreSQL's NOTIFY from the trigger that stored them, and polls besides while a webhook is
 * enabled. It prunes what the retention lets go. Its queries run on a pool of its own (`db`), never on the
 * connections requests wait for.
 */
export class WebhookDeliveryWorker {
  readonly #db: Pool
  readonly #settings: WebhookDeliverySettings
  readonly #observer: WebhookDeliveryObserver
  readonly #warn: (message: string, err?: unknown) => void
  #dispatcher: ReturnType<typeof createGuardedDispatcher> | undefined
  #listener: pg.Client | undefined
  /** The LISTEN connection is up: a NOTIFY will wake the worker. */
  #listenerUp = false
  #running = false
  /** performance.now() when pruning is next due. */
  #nextPruneAt = 0
  #inFlight = 0
  #wakeTimer: NodeJS.Timeout | undefined
  #wake: (() => void) | undefined
  /** A wake-up that came while the worker was claiming: the next wait returns at once instead of polling. */
  #woken = false
  #loop: Promise<void> | undefined
  #listening: Promise<void> | undefined
  readonly #attempts = new Set<Promise<void>>()
  readonly #recorder: AttemptRecorder
  /** performance.now() when the last claim came back. */
  #lastClaimAt = Number.NEGATIVE_INFINITY

  constructor(
    db: Pool,
    settings: WebhookDeliverySettings,
    observer: WebhookDeliveryObserver,
    warn: (message: string, err?: unknown) => void,
  ) {
    this.#db = db
    this.#settings = settings
    this.#observer = observer
    this.#warn = warn
    this.#recorder = new AttemptRecorder(db)
  }

  start(): void {
    if (this.#running) return
    this.#running = true
    if (this.#settings.listenConnectionString !== undefined) this.#listening = this.#listen()
    this.#loop = this.#run()
  }

  /** Stops claiming; attempts in flight finish (each is bounded by the attempt timeout). */
  async stop(): Promise<void> {
    this.#running = false
    this.wake()
    await this.#loop
    await Promise.allSettled([...this.#attempts])
    await this.#listener?.end().catch(() => {})
    await this.#listening
    await this.#dispatcher?.close().catch(() => {})
  }

  /** Look for due deliveries now. */
  wake(): void {
    if (this.#wake) this.#wake()
    else this.#woken = true
  }

  async #listen(): Promise<void> {
    while (this.#running) {
      // TCP keepalives: a connection dropped without a word (a NAT, a failover) ends rather than waits for ever.
      const client = new pg.Client({
        connectionString: this.#settings.listenConnectionString,
        types: typeParsers,
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
      })
      const lost = new Promise<void>((resolve) => {
        client.on('error', () => resolve())
        client.on('end', () => resolve())
      })
      try {
        await client.connect()
        client.on('notification', () => this.wake())
        await client.query('LISTEN arbiter_webhooks')
        this.#listener = client
        // stop() may have run while this connected: it ends the connection below rather than waiting on it.
        if (this.#running) {
          this.#listenerUp = true
          this.wake()
          await lost
          // A worker waiting without a timer for a NOTIFY polls again until the connection is back.
          this.#listenerUp = false
          this.wake()
        }
      } catch (err) {
        if (this.#running) this.#warn('webhook listener connection failed; polling until it is back', err)
      }
      await client.end().catch(() => {})
      if (this.#running) await new Promise((resolve) => setTimeout(resolve, this.#settings.pollMs))
    }
  }

  async #run(): Promise<void> {
    while (this.#running) {
      this.#woken = false
      await this.#claimPause()
      const claimed = await this.#claim()
      if (!this.#running) break
      if (performance.now() >= this.#nextPruneAt) await this.#prune()
      if (!this.#running) break
      if (claimed === 'full' && this.#inFlight < this.#settings.concurrency) continue
      if (this.#woken) continue
      const idle = claimed === 'none' && this.#inFlight === 0 && (await this.#mayIdle())
      if (this.#woken || !this.#running) continue
      await new Promise<void>((resolve) => {
        this.#wake = resolve
        // Idle: a NOTIFY, or this process creating or enabling a webhook, wakes it; a slow check besides, should
        // the LISTEN connection be lost unnoticed.
        const s = this.#settings
        this.#wakeTimer = setTimeout(resolve, idle ? s.idleCheckMs : s.pollMs)
      })
      clearTimeout(this.#wakeTimer)
      this.#wake = undefined
    }
  }

  /** Claims a page of due deliveries, as many as there are free slots, and starts their attempts. */
  async #claim(): Promise<'none' | 'some' | 'full' | 'failed'> {
    const free = this.#settings.concurrency - this.#inFlight
    if (free <= 0) return 'some'
    try {
      // The lease is counted from before the claim was sent, so this replica's deadline is never later than the
      // database's.
      const leaseEndsAt = performance.now() + this.#settings.leaseMs
      const claimed = await queryRows(this.#db, dueDeliveriesClaim(free, this.#settings.leaseMs))
      this.#lastClaimAt = performance.now()
      await this.#startAttempts(claimed, leaseEndsAt)
      return claimed.length === 0 ? 'none' : claimed.length === free ? 'full' : 'some'
    } catch (err) {
      this.#warn('claiming webhook deliveries failed; retrying', err)
      return 'failed'
    }
  }

  /**
   * Whether the worker may wait without polling (but for a check every idleCheckMs): no webhook is enabled, and it
   * is sure to be woken when one is (its LISTEN connection is up, or the database serves this process alone).
   * Nothing is due without an enabled webhook: deliveries are stored only for enabled ones, and disabling one fails
   * its pending deliveries (the ones stored while it was being disabled are failed here).
   */
  async #mayIdle(): Promise<boolean> {
    if (!this.#settings.soleProcess && !this.#listenerUp) return false
    try {
      if ((await queryOne(this.#db, enabledWebhookExists())).enabled) return false
      // None is pending either: a decision committing while its webhook was disabled may have stored one.
      return !(await failStrandedDeliveries(this.#db)).more
    } catch {
      return false
    }
  }

  async #prune(): Promise<void> {
    const s = this.#settings
    let more = false
    try {
      more = (await failStrandedDeliveries(this.#db)).more
      more =
        (await pruneDeliveries(this.#db, { retentionMs: s.retentionMs, batch: s.pruneBatch })).more || more
    } catch (err) {
      this.#warn('pruning webhook deliveries failed; retrying later', err)
    }
    this.#nextPruneAt = performance.now() + (more ? s.pollMs : s.pruneIntervalMs)
  }

  /**
   * Starts the attempts of a claimed page, with their events' bodies built once each. Should reading them fail, the
   * page's leases pass and its deliveries are claimed again.
   */
  async #startAttempts(claimed: readonly ClaimedDelivery[], leaseEndsAt: number): Promise<void> {
    if (claimed.length === 0) return
    const bodies = await eventBodies(
      this.#db,
      claimed.map((delivery) => ({
        id: delivery.event_id,
        type: delivery.event_type,
        created_at: delivery.event_created_at,
        manifest_id: delivery.manifest_id,
        case_kind: delivery.case_kind,
        case_id: delivery.case_id,
        webhook_id: delivery.webhook_id,
      })),
      this.#settings.showEscalation,
    )
    for (const delivery of claimed)
      this.#startAttempt(delivery, bodies.get(delivery.event_id) ?? null, leaseEndsAt)
  }

  /**
   * While attempts are in flight, a claim waits until half the slots are free or CLAIM_GAP_MS has passed since the
   * last one: every answer frees a slot and wakes the worker, and so does every stored decision's NOTIFY, and a
   * claim per wake-up would cost the database more than the deliveries it finds.
   */
  async #claimPause(): Promise<void> {
    const s = this.#settings
    if (this.#inFlight === 0 || s.concurrency - this.#inFlight >= s.concurrency / 2) return
    const wait = this.#lastClaimAt + CLAIM_GAP_MS - performance.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
  }

  #startAttempt(delivery: ClaimedDelivery, body: string | null, leaseEndsAt: number): void {
    this.#inFlight += 1
    const attempt = this.#attempt(delivery, body, leaseEndsAt)
      .catch((err) => this.#warn(`webhook delivery ${delivery.id}: recording the attempt failed`, err))
      .finally(() => {
        this.#inFlight -= 1
        this.#attempts.delete(attempt)
        // A slot is free: there may be more due deliveries than fitted in the last page.
        this.wake()
      })
    this.#attempts.add(attempt)
  }

  async #attempt(delivery: ClaimedDelivery, body: string | null, leaseEndsAt: number): Promise<void> {
    const started = performance.now()
    const s = this.#settings
    const abortAt = leaseEndsAt - leaseMarginMs(s.leaseMs)
    if (body !== null && abortAt - started < s.attemptTimeoutMs / 2) {
      await runStatement(this.#db, leaseRelease(delivery))
      return
    }
    const exchange: Exchange =
      body === null
        ? { outcome: 'network_error', statusCode: null, error: 'the event no longer exists' }
        : await this.#send(delivery, body, Math.min(s.attemptTimeoutMs, abortAt - performance.now()))
    this.#observer.attempt(exchange.outcome, (performance.now() - started) / 1000)
    await this.#record(delivery, exchange, body === null)
  }

  /** One POST, aborted after `timeout` ms (the attempt timeout, or less when the lease ends sooner). */
  async #send(delivery: ClaimedDelivery, body: string, timeoutMs: number): Promise<Exchange> {
    let url: URL
    try {
      url = new URL(delivery.url)
    } catch {
      return { outcome: 'blocked', statusCode: null, error: 'the webhook url is not an absolute URL' }
    }
    const refusal = checkRequestUrl(url, this.#settings.policy)
    if (refusal !== null) return { outcome: 'blocked', statusCode: null, error: refusal }
    const secrets = [delivery.secret, ...(delivery.previous_secret ? [delivery.previous_secret] : [])]
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Arbiter-Webhooks',
      ...webhookHeaders(secrets, delivery.event_id, Math.floor(Date.now() / 1000), body),
    }
    const timeout = Math.max(1, Math.floor(timeoutMs))
    const signal = AbortSignal.timeout(timeout)
    this.#dispatcher ??= createGuardedDispatcher(this.#settings.policy, {
      connectTimeoutMs: this.#settings.attemptTimeoutMs,
      ...(this.#settings.lookup ? { lookup: this.#settings.lookup } : {}),
    })
    let statusCode: number
    try {
      const response = await loadUndici().request(url, {
        method: 'POST',
        headers,
        body,
        signal,
        dispatcher: this.#dispatcher,
        headersTimeout: timeout,
        bodyTimeout: timeout,
      })
      statusCode = response.statusCode
      await readBounded(response.body)
    } catch (err) {
      return failedExchange(err, signal.aborted, timeout)
    }
    const kind = classifyStatus(statusCode)
    return {
      outcome: kind === 'success' ? 'success' : kind === 'gone' ? 'gone' : 'http_error',
      statusCode,
      error: kind === 'success' ? null : `HTTP ${statusCode}`,
    }
  }

  async #record(delivery: ClaimedDelivery, exchange: Exchange, giveUp: boolean): Promise<void> {
    const s = this.#settings
    let next: AttemptResult['next']
    if (exchange.outcome === 'success') next = { status: 'succeeded' }
    else if (exchange.outcome === 'gone' || giveUp) next = { status: 'failed' }
    else {
      const after = nextAfterFailure({
        failedAttempts: delivery.attempts + 1,
        ageMs: delivery.age_ms,
        maxAgeMs: s.maxAgeMs,
        schedule: s.retryScheduleMs,
        random: Math.random(),
      })
      next = after.kind === 'retry' ? { status: 'pending', delayMs: after.delayMs } : { status: 'failed' }
    }
    const recorded = await this.#recorder.record({
      claimed: delivery,
      result: { statusCode: exchange.statusCode, error: exchange.error, next },
    })
    if (recorded === undefined) return
    if (next.status !== 'pending') this.#observer.settled(next.status)
    if (exchange.outcome === 'success') {
      if (recorded.webhookFailing) await runStatement(this.#db, webhookHealthy(delivery.webhook_id))
      return
    }
    if (exchange.outcome === 'gone') {
      await this.#disable(delivery.webhook_id, 'gone', `the receiver answered 410 Gone`)
      return
    }
    const failing = await queryFirst(this.#db, webhookFailing(delivery.webhook_id))
    if (failing?.enabled && failing.failing_for_ms >= s.disableAfterMs) {
      await this.#disable(delivery.webhook_id, 'failing', 'every attempt failed for too long')
      return
    }
    if (next.status === 'failed') await runStatement(this.#db, webhookSettledStreakEnd(delivery.webhook_id))
  }

  /** Disables a webhook in one transaction with its audit record; its pending deliveries fail. */
  async #disable(webhookId: string, reason: WebhookDisabledReason, detail: string): Promise<void> {
    await withTransaction(this.#db, async (tx) => {
      const row = await queryFirst(tx, webhookDisable(webhookId, reason))
      if (row === undefined) return
      await runStatement(tx, pendingDeliveriesFail(webhookId, `webhook disabled: ${detail}`))
      await appendAuditRecords(tx, [
        {
          kind: 'webhook.disabled',
          actor: 'system',
          data: { webhook_id: row.id, url: row.url, reason, detail },
        },
      ])
    })
    // A decision that committed meanwhile may have stored a delivery the disabling did not see (should this fail,
    // the next pruning run sweeps again).
    await failStrandedDeliveries(this.#db).catch((err) =>
      this.#warn('failing the deliveries of a disabled webhook failed; retrying later', err),
    )
  }
}

/** Reads at most RESPONSE_BODY_LIMIT bytes of the answer, then drops the rest (and the connection with it). */
async function readBounded(body: AsyncIterable<Uint8Array> & { destroy(): unknown }): Promise<void> {
  let read = 0
  for await (const chunk of body) {
    read += chunk.length
    if (read >= RESPONSE_BODY_LIMIT) {
      body.destroy()
      return
    }
  }
}

function failedExchange(err: unknown, timedOut: boolean, timeoutMs: number): Exchange {
  const error = err as { name?: string; code?: string; message?: string }
  if (error?.name === 'SsrfBlockedError') {
    return { outcome: 'blocked', statusCode: null, error: String(error.message).slice(0, 500) }
  }
  if (timedOut || error?.code === 'UND_ERR_HEADERS_TIMEOUT' || error?.code === 'UND_ERR_BODY_TIMEOUT') {
    return { outcome: 'timeout', statusCode: null, error: `no complete answer within ${timeoutMs} ms` }
  }
  const cause = (err as { cause?: { code?: string } })?.cause?.code
  const code = error?.code ?? cause
  const message = `${code ? `${code}: ` : ''}${error?.message ?? String(err)}`
  return { outcome: 'network_error', statusCode: null, error: message.slice(0, 500) }
}
