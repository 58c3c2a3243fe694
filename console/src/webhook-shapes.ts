/** A registered webhook as `GET /v1/webhooks` lists it (the secret is never listed). */
export interface Webhook {
  webhook_id: string
  url: string
  events: string[]
  filter: Record<string, string | null> | null
  description: string | null
  created_at: string
  disabled_at: string | null
  disabled_reason: string | null
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed'

/** One event's delivery to one webhook, with its last attempt and the next one. */
export interface Delivery {
  delivery_id: string
  event_id: string
  type: string
  status: DeliveryStatus
  attempts: number
  next_attempt_at: string | null
  last_status_code: number | null
  last_error: string | null
  last_attempt_at: string | null
  created_at: string
}

/** "orchestrator_id = planner, verdict = AGREED", or null when the webhook takes every decision. */
export function filterText(filter: Webhook['filter']): string | null {
  const members = Object.entries(filter ?? {}).filter(
    (entry): entry is [string, string] => typeof entry[1] === 'string' && entry[1] !== '',
  )
  return members.length === 0 ? null : members.map(([name, value]) => `${name} = ${value}`).join(', ')
}

/** Why deliveries stopped, in words; the reasons are the service's own. */
export function disabledText(webhook: Webhook): string | null {
  if (webhook.disabled_at === null) return null
  switch (webhook.disabled_reason) {
    case 'gone':
      return 'the receiver answered 410 Gone'
    case 'failing':
      return 'every delivery failed for too long'
    case 'disabled_by_admin':
      return 'disabled by an admin'
    default:
      return webhook.disabled_reason ?? 'disabled'
  }
}

/** What the last attempt got: "HTTP 503", "HTTP 503: …", a network error, or nothing yet. */
export function lastAttemptText(delivery: Delivery): string {
  if (delivery.attempts === 0 || (delivery.last_status_code === null && delivery.last_error === null)) {
    return 'not attempted yet'
  }
  const code = delivery.last_status_code === null ? null : `HTTP ${delivery.last_status_code}`
  const error = delivery.last_error
  if (code && error && error !== code) return `${code}: ${error}`
  return code ?? error ?? ''
}

/** A delivery that changed since it was read (a redelivery) replaces its row in place; a new one goes on top. */
export function replaceDelivery(rows: readonly Delivery[], changed: Delivery): Delivery[] {
  const index = rows.findIndex((row) => row.delivery_id === changed.delivery_id)
  if (index < 0) return [changed, ...rows]
  return rows.map((row, i) => (i === index ? changed : row))
}
