/** The events a webhook may subscribe to. */
export const WEBHOOK_EVENT_TYPES = ['manifest.issued', 'escalation.opened', 'escalation.resolved'] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]

/** What `POST /v1/webhooks/{id}/test` sends: to that webhook alone, never subscribed to. */
export const WEBHOOK_TEST_EVENT = 'webhook.test' as const

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number]

/** Audit records of webhook administration (deliveries are operational data, not audit records). */
export const WEBHOOK_AUDIT_KINDS = [
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.disabled',
  'webhook.secret_rotated',
] as const

/** Why a webhook was disabled: by an admin, by its receiver's `410 Gone`, or after failing for too long. */
export const WEBHOOK_DISABLED_REASONS = ['disabled_by_admin', 'gone', 'failing'] as const
export type WebhookDisabledReason = (typeof WEBHOOK_DISABLED_REASONS)[number]
