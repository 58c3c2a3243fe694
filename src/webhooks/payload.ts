import type { Queryable } from '../db/pool.ts'
import { queryFirst } from '../db/statement.ts'
import { type EscalationView, toEscalationView } from '../engine/escalations.ts'
import { envelopeText } from '../engine/manifests.ts'
import { eventEscalation, eventManifest } from './repository.ts'

/** An escalation as `GET /v1/escalations` lists it (the HTTP layer knows the listing's shape for each kind). */
export type ShowEscalation = (escalation: EscalationView) => Record<string, unknown>

/** What an event names, as stored in webhook_events. */
export interface StoredEvent {
  type: string
  created_at: Date
  manifest_id: string | null
  case_kind: string | null
  case_id: string | null
  webhook_id: string
}

/**
 * The body of one event, `{type, timestamp, data}`: for `manifest.issued` the manifest's envelope; for
 * `escalation.*` the escalation as `GET /v1/escalations` lists it, with its HALT manifest's envelope as
 * `envelope`; for `webhook.test` `{webhook_id}`. Built from the stored rows at each attempt, because the envelope's
 * `audit_seq` is assigned after the decision commits (it is null only while the log has not sequenced it yet).
 * The manifest is written as stored, byte for byte as signed. Null when what the event names is gone.
 */
export async function eventBody(
  db: Queryable,
  event: StoredEvent,
  showEscalation: ShowEscalation,
): Promise<string | null> {
  const data = await eventData(db, event, showEscalation)
  if (data === null) return null
  return `{"type":${JSON.stringify(event.type)},"timestamp":${JSON.stringify(event.created_at.toISOString())},"data":${data}}`
}

async function eventData(
  db: Queryable,
  event: StoredEvent,
  showEscalation: ShowEscalation,
): Promise<string | null> {
  if (event.type === 'webhook.test') return JSON.stringify({ webhook_id: event.webhook_id })
  if (event.manifest_id === null) return null
  const envelope = await queryFirst(db, eventManifest(event.manifest_id))
  if (envelope === undefined) return null
  if (event.type === 'manifest.issued') return envelopeText(envelope)
  if (event.case_kind === null || event.case_id === null) return null
  const escalation = await queryFirst(db, eventEscalation(event.case_kind, event.case_id))
  if (escalation === undefined) return null
  const view = showEscalation(toEscalationView(escalation))
  // An escalation is shown as it was when the event happened: an `opened` event delivered after the resolution
  // still says open.
  const shown = event.type === 'escalation.opened' ? { ...view, status: 'open', resolved_at: null } : view
  return `${JSON.stringify(shown).slice(0, -1)},"envelope":${envelopeText(envelope)}}`
}
