import { problemAlert } from '../api.ts'
import { h, replaceChildren, timeOf, verdictBadge } from '../dom.ts'
import { actorText, type KeyLabels, keyLabels } from '../key-labels.ts'
import type { AuditRecord, Json, Story } from '../shapes.ts'
import type { ViewContext } from '../view.ts'

/** Records seen in timelines, by seq, so the proof screen can recompute a leaf from its record. */
export const knownRecords = new Map<number, AuditRecord>()

/**
 * One case's story: its audit records in log order, each with its seq and a link to the proof that the log
 * holds it. Reading the audit log needs an ops or admin key; another key gets the reason instead.
 */
export function storyTimeline(ctx: ViewContext, storyPath: string): HTMLElement {
  const region = h(
    'div',
    { class: 'story', 'aria-busy': 'true' },
    h('p', { class: 'loading' }, 'Loading the story…'),
  )
  void (async () => {
    try {
      const [story] = await Promise.all([ctx.api.get<Story>(storyPath, ctx.signal), keyLabels(ctx.api)])
      // Read again only if an actor is a key made since the labels were read.
      const labels = await keyLabels(
        ctx.api,
        story.records.map((record) => record.actor),
      )
      for (const record of story.records) knownRecords.set(record.seq, record)
      replaceChildren(
        region,
        story.records.length === 0
          ? h('p', { class: 'empty' }, 'No audit records yet.')
          : h(
              'ol',
              { class: 'timeline', 'aria-label': 'Audit records, oldest first' },
              story.records.map((record) => entry(record, labels)),
            ),
      )
    } catch (err) {
      if (ctx.signal.aborted) return
      replaceChildren(region, problemAlert(err, 'read the audit log'))
    } finally {
      region.removeAttribute('aria-busy')
    }
  })()
  return region
}

function entry(record: AuditRecord, labels: KeyLabels): HTMLElement {
  return h(
    'li',
    { class: `timeline-entry kind-${record.kind.replace(/\./g, '-')}` },
    h(
      'div',
      { class: 'timeline-head' },
      h('span', { class: 'seq' }, `seq ${record.seq}`),
      h('strong', null, record.kind),
      record.verdict ? verdictBadge(record.verdict) : null,
    ),
    h(
      'div',
      { class: 'timeline-meta' },
      timeOf(record.at, true),
      ' · by ',
      actorText(record.actor, labels),
      record.orchestrator_id ? [' · for ', h('code', null, record.orchestrator_id)] : null,
    ),
    dataSummary(record.data),
    h(
      'a',
      {
        // A manifest's own proof carries its record, so it can be checked even when opened on its own.
        href:
          record.kind === 'manifest.issued' && record.manifest_id
            ? `#/proofs/manifest/${record.manifest_id}`
            : `#/proofs/${record.seq}`,
        class: 'proof-link',
        'aria-label': `Inclusion proof of seq ${record.seq}`,
      },
      'Inclusion proof',
    ),
  )
}

/** The record's `data` as short key/value pairs; long or nested values stay in the raw record. */
function dataSummary(data: Record<string, Json>): HTMLElement | null {
  const pairs = Object.entries(data).filter(([, value]) => value !== null)
  if (pairs.length === 0) return null
  return h(
    'ul',
    { class: 'record-data' },
    pairs.map(([key, value]) => {
      const text = typeof value === 'string' ? value : JSON.stringify(value)
      return h('li', null, h('span', { class: 'data-key' }, key), ' ', h('code', null, clip(text, 80)))
    }),
  )
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}
