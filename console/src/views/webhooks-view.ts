import { ApiError, alertBox, problemAlert } from '../api.ts'
import { serves } from '../capabilities.ts'
import { h, replaceChildren, scrollingTable, statusBadge, timeOf } from '../dom.ts'
import type { Page } from '../shapes.ts'
import type { ViewContext } from '../view.ts'
import {
  type Delivery,
  disabledText,
  filterText,
  lastAttemptText,
  replaceDelivery,
  type Webhook,
} from '../webhook-shapes.ts'

/** Deliveries shown per webhook: one page of the latest (the API lists newest first); the API holds the rest. */
const RECENT = 20

/** Webhooks and their recent deliveries: what each receiver got, what failed and when it is tried again. */
export async function webhooksView(ctx: ViewContext, main: HTMLElement): Promise<void> {
  main.append(
    h(
      'p',
      { class: 'lead' },
      'Receivers Arbiter pushes decisions to. Each delivery is retried until it lands; a failed one can be sent again.',
    ),
  )
  if (!(await serves('/v1/webhooks'))) {
    main.append(h('p', { class: 'empty' }, 'This Arbiter does not serve webhooks.'))
    return
  }
  const list = h('div', { 'aria-busy': 'true' }, h('p', { class: 'loading' }, 'Loading…'))
  const refresh = h('button', { type: 'button' }, 'Refresh')
  main.append(h('p', { class: 'webhook-actions' }, refresh), list)
  const load = async () => {
    list.setAttribute('aria-busy', 'true')
    try {
      const webhooks = await ctx.api.getAll<Webhook>('/v1/webhooks?limit=100', 10, ctx.signal)
      const cards = await Promise.all(webhooks.map((webhook) => webhookCard(ctx, webhook)))
      replaceChildren(
        list,
        webhooks.length === 0
          ? h('p', { class: 'empty' }, 'No webhooks. An admin registers one with POST /v1/webhooks.')
          : h('ol', { class: 'cards', 'aria-label': 'Webhooks' }, cards),
      )
    } catch (err) {
      if (ctx.signal.aborted) return
      replaceChildren(list, refusal(err, 'see webhooks'))
    } finally {
      list.removeAttribute('aria-busy')
    }
  }
  refresh.addEventListener('click', () => void load())
  await load()
}

/** Webhooks are an admin's: a 403 says so rather than the ops role the other screens need. */
function refusal(err: unknown, action: string): HTMLElement {
  if (err instanceof ApiError && err.status === 403) {
    return alertBox('This key may not do that (403)', [
      `Only an admin key may ${action}. Use “Change key” to enter one.`,
    ])
  }
  return problemAlert(err, action)
}

async function webhookCard(ctx: ViewContext, webhook: Webhook): Promise<HTMLElement> {
  const base = `/v1/webhooks/${encodeURIComponent(webhook.webhook_id)}`
  const message = h('p', { class: 'hint', role: 'status' })
  const deliveriesRegion = h('div')
  let rows: Delivery[] = []

  const drawDeliveries = () => {
    replaceChildren(
      deliveriesRegion,
      rows.length === 0
        ? h('p', { class: 'empty' }, 'No deliveries yet.')
        : scrollingTable(
            `Recent deliveries to ${webhook.url}`,
            h(
              'table',
              { class: 'deliveries' },
              h('caption', null, `Latest ${rows.length}, newest first`),
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  ['Event', 'Status', 'Attempts', 'Last attempt', 'Result', 'Next attempt', ''].map((label) =>
                    h('th', { scope: 'col' }, label),
                  ),
                ),
              ),
              h('tbody', null, rows.map(deliveryRow)),
            ),
          ),
    )
  }

  /** Runs one action whose answer is the delivery it queued; `action` completes "Only an admin key may …". */
  const act = async (done: string, action: string, run: () => Promise<Delivery>): Promise<boolean> => {
    message.textContent = ''
    try {
      const changed = await run()
      rows = replaceDelivery(rows, changed)
      drawDeliveries()
      message.textContent = `${done}: delivery ${changed.delivery_id} is pending.`
      return true
    } catch (err) {
      if (!ctx.signal.aborted) message.replaceChildren(refusal(err, action))
      return false
    }
  }

  const deliveryRow = (delivery: Delivery) => {
    const redeliver = h(
      'button',
      { type: 'button', 'aria-label': `Redeliver ${delivery.type} ${delivery.event_id}` },
      'Redeliver',
    )
    redeliver.addEventListener('click', async () => {
      redeliver.disabled = true
      const queued = await act('Redelivered', 'redeliver', () =>
        ctx.api.post<Delivery>(
          `${base}/deliveries/${encodeURIComponent(delivery.delivery_id)}/redeliver`,
          undefined,
          ctx.signal,
        ),
      )
      if (!queued) redeliver.disabled = false
    })
    return h(
      'tr',
      { 'data-delivery': delivery.delivery_id },
      h('td', null, h('code', null, delivery.type), h('br'), h('code', { class: 'hash' }, delivery.event_id)),
      h('td', null, statusBadge(delivery.status)),
      h('td', null, String(delivery.attempts)),
      h('td', null, timeOf(delivery.last_attempt_at, true)),
      h('td', null, lastAttemptText(delivery)),
      h('td', null, delivery.status === 'pending' ? timeOf(delivery.next_attempt_at, true) : '—'),
      h('td', null, redeliver),
    )
  }

  try {
    const page = await ctx.api.get<Page<Delivery>>(`${base}/deliveries?limit=${RECENT}`, ctx.signal)
    rows = page.items
    drawDeliveries()
  } catch (err) {
    if (ctx.signal.aborted) throw err
    deliveriesRegion.replaceChildren(refusal(err, 'see deliveries'))
  }

  const sendTest = h('button', { type: 'button' }, 'Send a test event')
  sendTest.addEventListener(
    'click',
    () =>
      void act('Test event sent', 'send test events', () =>
        ctx.api.post<Delivery>(`${base}/test`, undefined, ctx.signal),
      ),
  )
  const disabled = disabledText(webhook)
  const enable = disabled ? h('button', { type: 'button' }, 'Enable again') : null
  enable?.addEventListener('click', async () => {
    try {
      await ctx.api.patch<Webhook>(base, { disabled: false }, ctx.signal)
      ctx.reload()
    } catch (err) {
      if (!ctx.signal.aborted) message.replaceChildren(refusal(err, 'enable webhooks'))
    }
  })
  const filter = filterText(webhook.filter)
  // Named by id, not by URL: two webhooks may share a receiver.
  const headingId = `webhook-${webhook.webhook_id}`
  return h(
    'li',
    { class: `card webhook${disabled ? ' disabled' : ''}`, 'data-webhook': webhook.webhook_id },
    h(
      'section',
      { 'aria-labelledby': headingId },
      h('h2', { id: headingId, class: 'webhook-url' }, webhook.url),
      h(
        'p',
        { class: 'card-meta' },
        disabled ? statusBadge('disabled') : statusBadge('enabled'),
        webhook.events.map((event) => h('span', { class: 'chip' }, event)),
      ),
      webhook.description ? h('p', null, webhook.description) : null,
      h('p', { class: 'card-meta' }, h('span', null, filter ? `Only ${filter}` : 'Every decision')),
      disabled
        ? h(
            'p',
            { class: 'callout' },
            'Deliveries stopped ',
            timeOf(webhook.disabled_at, true),
            `: ${disabled}.`,
          )
        : null,
      h('p', { class: 'webhook-actions' }, sendTest, enable),
      message,
      deliveriesRegion,
    ),
  )
}
