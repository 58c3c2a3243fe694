import type { Queryable } from '../db/pool.ts'
import type { EscalationListRow } from '../db/repositories/escalations.ts'
import { queryRows } from '../db/statement.ts'
import { type EscalationView, toEscalationView } from '../engine/escalations.ts'
import { envelopeText, type StoredEnvelope } from '../engine/manifests.ts'
import { eventEscalations, eventManifests } from './repository.ts'

/** An escalation as `GET /v1/escalations` lists it (the HTTP layer knows the listing's shape for each kind). */
export type ShowEscalation = (escalation: EscalationView) => Record<string, unknown>

/** What an event names, as stored in webhook_events. */
export interface StoredEvent {
  id: string
  type: string
  created_at: Date
  manifest_id: string | null
  case_kind: string | null
  case_id: string | null
  /** The webhook a `webhook.test` event is for (the delivery's). */
  webhook_id: string
}

/**
 * The bodies of the events of a claimed page, by event id, each built once however many webhooks it goes to: one
 * query reads every manifest they name, and one more their escalations when there are escalation events. A body is
 * `{type, timestamp, data}`: for `manifest.issued` the manifest's envelope; for `escalation.*` the escalation as
 * `GET /v1/escalations` lists it, with its HALT manifest's envelope as `envelope`; for `webhook.test`
 * `{webhook_id}`. Built from the stored rows at each attempt, because the envelope's `audit_seq` is assigned after
 * the decision commits (it is null only while the log has not sequenced it yet). The manifest is written as
 * stored, byte for byte as signed. Null when what the event names is gone.
 */
export async function eventBodies(
  db: Queryable,
  events: readonly StoredEvent[],
  showEscalation: ShowEscalation,
): Promise<Map<string, string | null>> {
  const byId = new Map(events.map((event) => [event.id, event]))
  const manifestIds = new Set<string>()
  const cases = new Map<string, { case_kind: string; case_id: string }>()
  for (const event of byId.values()) {
    if (event.type === 'webhook.test') continue
    if (event.manifest_id !== null) manifestIds.add(event.manifest_id)
    if (event.type !== 'manifest.issued' && event.case_kind !== null && event.case_id !== null) {
      cases.set(caseKey(event.case_kind, event.case_id), {
        case_kind: event.case_kind,
        case_id: event.case_id,
      })
    }
  }
  const envelopes = new Map<string, StoredEnvelope>()
  if (manifestIds.size > 0) {
    for (const row of await queryRows(db, eventManifests([...manifestIds]))) envelopes.set(row.id, row)
  }
  const escalations = new Map<string, EscalationListRow>()
  if (cases.size > 0) {
    for (const row of await queryRows(db, eventEscalations([...cases.values()]))) {
      escalations.set(caseKey(row.case_kind, row.case_id), row)
    }
  }
  const bodies = new Map<string, string | null>()
  for (const event of byId.values()) {
    const data = eventData(event, envelopes, escalations, showEscalation)
    bodies.set(
      event.id,
      data === null
        ? null
        : `{"type":${JSON.stringify(event.type)},"timestamp":${JSON.stringify(event.created_at.toISOString())},"data":${data}}`,
    )
  }
  return bodies
}

function caseKey(caseKind: string, caseId: string): string {
  return `${caseKind}/${caseId}`
}

function eventData(
  event: StoredEvent,
  envelopes: ReadonlyMap<string, StoredEnvelope>,
  escalations: ReadonlyMap<string, EscalationListRow>,
  showEscalation: ShowEscalation,
): string | null {
  if (event.type === 'webhook.test') return JSON.stringify({ webhook_id: event.webhook_id })
  const envelope = event.manifest_id === null ? undefined : envelopes.get(event.manifest_id)
  if (envelope === undefined) return null
  if (event.type === 'manifest.issued') return envelopeText(envelope)
  if (event.case_kind === null || event.case_id === null) return null
  const escalation = escalations.get(caseKey(event.case_kind, event.case_id))
  if (escalation === undefined) return null
  const view = showEscalation(toEscalationView(escalation))
  // An escalation is shown as it was when the event happened: an `opened` event delivered after the resolution
  // still says open.
  const shown = event.type === 'escalation.opened' ? { ...view, status: 'open', resolved_at: null } : view
  return `${JSON.stringify(shown).slice(0, -1)},"envelope":${envelopeText(envelope)}}`
}
