import type { Api } from './api.ts'
import { h } from './dom.ts'
import type { AuditRecord } from './shapes.ts'

/** A key's label and role, as its `key.created` audit record tells them. */
export interface KeyLabel {
  label: string
  role: string
}

export type KeyLabels = ReadonlyMap<string, KeyLabel>

const cache = new WeakMap<Api, { labels: Promise<KeyLabels>; readAt: number }>()
/** A key made after the labels were read is looked up again, at most this often. */
const REREAD_MS = 2_000

/**
 * Who each key is, for showing actors by name: read from the audit log's `key.created` records (the labels an
 * admin gave), which ops and admin keys may read, once per key session and again when an actor in `actors` is
 * not among them (a key made since). Another key gets an empty map, and actors show as their ids.
 */
export async function keyLabels(api: Api, actors: string[] = []): Promise<KeyLabels> {
  const cached = cache.get(api)
  if (cached) {
    const labels = await cached.labels
    const unknown = actors.some((actor) => actor !== 'system' && !labels.has(actor))
    if (!unknown || labels.size === 0 || Date.now() - cached.readAt < REREAD_MS) return labels
  }
  const labels = api
    .getAll<AuditRecord>('/v1/audit/records?kind=key.created&limit=500', 20)
    .then((records) => labelsFrom(records))
    .catch(() => new Map<string, KeyLabel>())
  cache.set(api, { labels, readAt: Date.now() })
  return labels
}

export function labelsFrom(records: Pick<AuditRecord, 'data'>[]): Map<string, KeyLabel> {
  const labels = new Map<string, KeyLabel>()
  for (const { data } of records) {
    const id = data['key_id']
    const label = data['label']
    if (typeof id === 'string' && typeof label === 'string') {
      labels.set(id, { label, role: typeof data['role'] === 'string' ? data['role'] : '' })
    }
  }
  return labels
}

/** An actor as a person reads it: the key's label (its id in the tooltip), Arbiter itself, or the bare id. */
export function actorText(actor: string, labels: KeyLabels): HTMLElement {
  if (actor === 'system') return h('span', { class: 'actor' }, 'Arbiter')
  const known = labels.get(actor)
  if (!known) return h('code', { class: 'actor' }, actor)
  return h(
    'span',
    { class: 'actor', title: `key ${actor}` },
    known.label,
    known.role ? h('span', { class: 'actor-role' }, ` (${known.role})`) : null,
  )
}
