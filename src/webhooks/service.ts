import { randomBytes, randomUUID } from 'node:crypto'
import { type AuditEntry, appendAuditRecords } from '../audit-log/append.ts'
import { type Pool, type Queryable, type Transaction, withTransaction } from '../db/pool.ts'
import { queryFirst, queryOne, queryRows, runStatement } from '../db/statement.ts'
import { encodeSecret } from '../domain/webhooks/signature.ts'
import type { WebhookDeliveryStatus, WebhookEventType } from '../domain/webhooks/vocabulary.ts'
import { AppError } from '../errors.ts'
import { type Page, type PageRequest, readSeqPage } from '../pagination.ts'
import {
  checkRequestUrl,
  type HostLookup,
  SsrfBlockedError,
  type SsrfPolicy,
  vetHost,
} from '../probes/ssrf-guard.ts'
import type { Actor } from '../services/context.ts'
import {
  type DeliveryRow,
  deliveriesPage,
  deliveryById,
  deliveryRedeliver,
  deliveryWorkersWake,
  pendingDeliveriesFail,
  testEventInsert,
  type WebhookFilter,
  type WebhookRow,
  webhookDelete,
  webhookDeliveriesDelete,
  webhookDisable,
  webhookInsert,
  webhookLock,
  webhookLockForDelete,
  webhookById as webhookRow,
  webhookSecretRotation,
  webhooksPage,
  webhookUpdate,
} from './repository.ts'
import { failStrandedDeliveries } from './retention.ts'

/** What the webhook use cases need: the database and the SSRF policy URLs are checked against. */
export interface WebhookContext {
  db: Pool
  policy: SsrfPolicy
  /** Resolves host names at registration (tests); default the system's resolver. */
  lookup?: HostLookup | undefined
  /** Wakes this process's delivery worker (other replicas' hear the NOTIFY). */
  wake?: (() => void) | undefined
}

/** A registration does not wait longer than this for its host name to resolve. */
const REGISTRATION_LOOKUP_MS = 2_000

/** How long the secret a rotation replaced keeps signing, so receivers can switch without losing a delivery. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000

/** Key bytes of a new secret (within the 24–64 the specification allows). */
const SECRET_BYTES = 32

export function toWebhookView(row: WebhookRow) {
  return {
    webhook_id: row.id,
    url: row.url,
    events: row.events,
    filter: {
      kind: row.filter.kind ?? null,
      subagent_id: row.filter.subagent_id ?? null,
      verdict: row.filter.verdict ?? null,
      directive: row.filter.directive ?? null,
      orchestrator_id: row.filter.orchestrator_id ?? null,
    },
    description: row.description,
    created_at: row.created_at.toISOString(),
    disabled_at: row.disabled_at ? row.disabled_at.toISOString() : null,
    disabled_reason: row.disabled_reason,
  }
}

export type WebhookView = ReturnType<typeof toWebhookView>
export type WebhookWithSecret = WebhookView & { secret: string }

export function toDeliveryView(row: DeliveryRow) {
  return {
    delivery_id: row.id,
    event_id: row.event_id,
    type: row.type,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at:
      row.status === 'pending' && row.next_attempt_at ? row.next_attempt_at.toISOString() : null,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    last_attempt_at: row.last_attempt_at ? row.last_attempt_at.toISOString() : null,
    created_at: row.created_at.toISOString(),
  }
}

export type DeliveryView = ReturnType<typeof toDeliveryView>

export interface WebhookInput {
  url: string
  events: WebhookEventType[]
  filter?: { [K in keyof WebhookFilter]?: WebhookFilter[K] | null } | null | undefined
  description?: string | null | undefined
}

export interface WebhookPatch {
  url?: string | undefined
  events?: WebhookEventType[] | undefined
  filter?: WebhookInput['filter']
  description?: string | null | undefined
  disabled?: boolean | undefined
}

/**
 * The URL a webhook is registered with passes the SSRF guard: its form, its host, and the addresses its name
 * resolves to now (unless private addresses are allowed). A name that does not resolve, or not in time, is
 * accepted: it is resolved again, and every address vetted, at each attempt.
 */
async function checkUrl(ctx: WebhookContext, url: string): Promise<void> {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw invalidUrl('not an absolute URL')
  }
  const refusal =
    parsed.username !== '' || parsed.password !== '' ? 'credentials in the URL are not allowed' : null
  const guard = refusal ?? checkRequestUrl(parsed, ctx.policy)
  if (guard !== null) throw invalidUrl(guard)
  const resolved = ctx.policy.allowPrivate ? null : await addressRefusal(ctx, parsed.hostname)
  if (resolved !== null) throw invalidUrl(resolved)
}

/**
 * Why the guard refuses an address `hostname` resolves to now, or null: when every one is allowed, and when the
 * name does not resolve within REGISTRATION_LOOKUP_MS. IP literals and loopback names are judged without a lookup.
 */
async function addressRefusal(ctx: WebhookContext, hostname: string): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined
  const vetted = vetHost(hostname, ctx.policy, ctx.lookup).then(
    () => null,
    (err: unknown) => (err instanceof SsrfBlockedError ? err.message : null),
  )
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), REGISTRATION_LOOKUP_MS)
  })
  return Promise.race([vetted, late]).finally(() => clearTimeout(timer))
}

/**
 * A webhook was created or enabled: the delivery workers, which send no query while no webhook is enabled, wake at
 * the commit (NOTIFY for every replica, and this process's own directly).
 */
async function wakeWorkers(ctx: WebhookContext, tx: Transaction): Promise<void> {
  await runStatement(tx, deliveryWorkersWake())
  tx.afterCommit(() => ctx.wake?.())
}

function invalidUrl(reason: string) {
  return new AppError('VALIDATION', `webhook url refused: ${reason}`, {}, [
    { path: 'body/url', message: reason },
  ])
}

/** Only the members given, so that the stored filter is what the admin set. */
function storedFilter(filter: WebhookInput['filter']): WebhookFilter {
  const stored: Record<string, string> = {}
  for (const [key, value] of Object.entries(filter ?? {})) {
    if (typeof value === 'string') stored[key] = value
  }
  return stored as WebhookFilter
}

function newSecret(): string {
  return encodeSecret(randomBytes(SECRET_BYTES))
}

function webhookEntry(kind: AuditEntry['kind'], row: WebhookRow, actor: Actor, extra = {}): AuditEntry {
  return {
    kind,
    actor,
    data: {
      webhook_id: row.id,
      url: row.url,
      events: row.events,
      filter: row.filter as { [key: string]: string },
      ...extra,
    },
  }
}

const notFound = (id: string) => new AppError('NOT_FOUND', `no webhook ${id}`)
const disabledConflict = (id: string) =>
  new AppError('CONFLICT', `webhook ${id} is disabled; enable it first`)

export async function createWebhook(
  ctx: WebhookContext,
  input: WebhookInput,
  actor: Actor,
): Promise<WebhookWithSecret> {
  await checkUrl(ctx, input.url)
  const secret = newSecret()
  const row = await withTransaction(ctx.db, async (tx) => {
    const created = await queryOne(
      tx,
      webhookInsert({
        id: randomUUID(),
        url: input.url,
        events: [...new Set(input.events)],
        filter: storedFilter(input.filter),
        description: input.description ?? null,
        secret,
        created_at: new Date(),
      }),
    )
    await appendAuditRecords(tx, [webhookEntry('webhook.created', created, actor)])
    await wakeWorkers(ctx, tx)
    return created
  })
  return { ...toWebhookView(row), secret }
}

export async function getWebhook(ctx: Pick<WebhookContext, 'db'>, id: string): Promise<WebhookView> {
  const row = await queryFirst(ctx.db, webhookRow(id))
  if (!row) throw notFound(id)
  return toWebhookView(row)
}

export async function pageWebhooks(
  ctx: Pick<WebhookContext, 'db'>,
  page: PageRequest,
): Promise<Page<WebhookView>> {
  return readSeqPage(
    page,
    (afterSeq, limit) => queryRows(ctx.db, webhooksPage(afterSeq, limit)),
    (row) => row.list_seq,
    toWebhookView,
  )
}

/** How a route finds the webhook its path names (for a 404 before the body is judged). */
export const webhookById = {
  noun: 'webhook',
  find: (db: Queryable, id: string) => queryFirst(db, webhookRow(id)),
}

/**
 * PATCH: the members given replace the stored ones (`filter` as a whole). `disabled: true` disables it (its
 * pending deliveries fail); `disabled: false` enables it again and clears `disabled_at`. A change of state is
 * audited as `webhook.disabled` or `webhook.updated`.
 */
export async function patchWebhook(
  ctx: WebhookContext,
  id: string,
  patch: WebhookPatch,
  actor: Actor,
): Promise<WebhookView> {
  // Before the transaction: the name's lookup must not hold a connection (the route answered 404 already).
  if (patch.url !== undefined) await checkUrl(ctx, patch.url)
  let disabled = false
  const view = await withTransaction(ctx.db, async (tx) => {
    const current = await queryFirst(tx, webhookLock(id))
    if (!current) throw notFound(id)
    const disabling = patch.disabled === true && current.disabled_at === null
    const enabling = patch.disabled === false && current.disabled_at !== null
    const now = new Date()
    const row = await queryOne(
      tx,
      webhookUpdate({
        id,
        url: patch.url ?? current.url,
        events: patch.events ? [...new Set(patch.events)] : current.events,
        filter: patch.filter !== undefined ? storedFilter(patch.filter) : current.filter,
        description: patch.description !== undefined ? patch.description : current.description,
        disabled_at: disabling ? now : enabling ? null : current.disabled_at,
        disabled_reason: disabling ? 'disabled_by_admin' : enabling ? null : current.disabled_reason,
        failing_since: enabling ? null : current.failing_since,
        updated_at: now,
      }),
    )
    const entries = [webhookEntry('webhook.updated', row, actor, { enabled: row.disabled_at === null })]
    if (disabling) {
      disabled = true
      await runStatement(tx, pendingDeliveriesFail(id, 'webhook disabled'))
      entries.push(webhookEntry('webhook.disabled', row, actor, { reason: 'disabled_by_admin' }))
    }
    if (enabling) await wakeWorkers(ctx, tx)
    await appendAuditRecords(tx, entries)
    return toWebhookView(row)
  })
  // A decision that committed meanwhile may have stored a delivery the disabling did not see. Should this sweep
  // fail, the delivery worker's next one settles it.
  if (disabled) await failStrandedDeliveries(ctx.db).catch(() => {})
  return view
}

/** Deliveries one statement of a webhook's deletion deletes at most. */
const DELETE_BATCH = 1_000

/**
 * Deletes a webhook and its deliveries. Deleting them all in one statement would hold the webhook's row locked
 * against every decision enqueuing a delivery for it until the last is gone; so it is disabled first (no delivery
 * is stored for it from then on), its deliveries are deleted in batches, and then the row with the few stored
 * meanwhile, with its audit record.
 */
export async function removeWebhook(ctx: WebhookContext, id: string, actor: Actor): Promise<void> {
  await withTransaction(ctx.db, async (tx) => {
    if (!(await queryFirst(tx, webhookLock(id)))) throw notFound(id)
    await queryFirst(tx, webhookDisable(id, 'disabled_by_admin'))
  })
  for (;;) {
    const { deleted } = await queryOne(ctx.db, webhookDeliveriesDelete(id, DELETE_BATCH))
    if (deleted < DELETE_BATCH) break
  }
  await withTransaction(ctx.db, async (tx) => {
    const current = await queryFirst(tx, webhookLockForDelete(id))
    if (!current) throw notFound(id)
    await runStatement(tx, webhookDelete(id))
    await appendAuditRecords(tx, [webhookEntry('webhook.deleted', current, actor)])
  })
}

/** A new secret; the one it replaces keeps signing for 24 h (two `v1,` signatures). */
export async function rotateSecret(
  ctx: WebhookContext,
  id: string,
  actor: Actor,
): Promise<WebhookWithSecret> {
  const secret = newSecret()
  const row = await withTransaction(ctx.db, async (tx) => {
    const current = await queryFirst(tx, webhookLock(id))
    if (!current) throw notFound(id)
    const now = new Date()
    const rotated = await queryOne(
      tx,
      webhookSecretRotation(id, secret, new Date(now.getTime() + ROTATION_OVERLAP_MS), now),
    )
    await appendAuditRecords(tx, [
      webhookEntry('webhook.secret_rotated', rotated, actor, {
        previous_secret_expires_at: rotated.previous_secret_expires_at!.toISOString(),
      }),
    ])
    return rotated
  })
  return { ...toWebhookView(row), secret }
}

export async function pageDeliveries(
  ctx: Pick<WebhookContext, 'db'>,
  id: string,
  query: { status?: WebhookDeliveryStatus | undefined },
  page: PageRequest,
): Promise<Page<DeliveryView>> {
  if (!(await queryFirst(ctx.db, webhookRow(id)))) throw notFound(id)
  // Newest first: the cursor's seq is the last delivery read, and the next page holds older ones.
  return readSeqPage(
    page,
    (beforeSeq, limit) => queryRows(ctx.db, deliveriesPage(id, { status: query.status, beforeSeq }, limit)),
    (row) => row.list_seq,
    toDeliveryView,
  )
}

/** A new attempt of one delivery now (a settled one is pending again). A disabled webhook is called by no one. */
export async function redeliverDelivery(
  ctx: Pick<WebhookContext, 'db'>,
  id: string,
  deliveryId: string,
): Promise<DeliveryView> {
  const webhook = await queryFirst(ctx.db, webhookRow(id))
  if (!webhook) throw notFound(id)
  if (webhook.disabled_at !== null) throw disabledConflict(id)
  if (!(await queryFirst(ctx.db, deliveryRedeliver(id, deliveryId)))) {
    // Disabled since it was read: no delivery of it is made pending again.
    if ((await queryFirst(ctx.db, webhookRow(id)))?.disabled_at) throw disabledConflict(id)
    throw new AppError('NOT_FOUND', `no delivery ${deliveryId} of webhook ${id}`)
  }
  await runStatement(ctx.db, deliveryWorkersWake())
  return toDeliveryView(await queryOne(ctx.db, deliveryById(id, deliveryId)))
}

/** A `webhook.test` event to this webhook alone. */
export async function sendTestEvent(ctx: Pick<WebhookContext, 'db'>, id: string): Promise<DeliveryView> {
  const webhook = await queryFirst(ctx.db, webhookRow(id))
  if (!webhook) throw notFound(id)
  if (webhook.disabled_at !== null) throw disabledConflict(id)
  const deliveryId = randomUUID()
  await runStatement(ctx.db, testEventInsert(id, randomUUID(), deliveryId))
  return toDeliveryView(await queryOne(ctx.db, deliveryById(id, deliveryId)))
}
