import { directiveBadge, h, replaceChildren, timeOf, verdictBadge } from '../dom.ts'
import type { FeedEntry } from '../manifest-feed.ts'
import { caseOf } from '../shapes.ts'
import type { View } from '../view.ts'

const SHOWN = 200
/** A manifest that arrived this recently is marked as new. */
const FRESH_MS = 10_000

/** The live feed: every manifest as it is signed, newest first. */
export const feedView: View = (ctx, main) => {
  const status = h('p', { class: 'feed-status', role: 'status' })
  const list = h('ol', { class: 'feed', 'aria-label': 'Manifests, newest first' })
  main.append(
    h(
      'p',
      { class: 'lead' },
      'Every signed manifest as Arbiter issues it, newest first: the last hour, then live over the manifest stream. ',
      'After a dropped connection the stream resumes right after the last manifest received.',
    ),
    status,
    list,
  )
  // Items are inserted, never redrawn: a link the operator has focused stays where it is as new ones arrive.
  const rendered = new Map<string, HTMLElement>()
  const empty = h(
    'li',
    { class: 'empty' },
    'No manifests yet. New ones appear here as soon as they are signed.',
  )
  const draw = () => {
    const { entries, state } = ctx.feed
    const live =
      state.phase === 'open'
        ? 'Live.'
        : state.phase === 'waiting'
          ? `Disconnected (${state.reason}); reconnecting, attempt ${state.attempt}.`
          : state.phase === 'refused'
            ? `The stream refused this key (${state.status}).`
            : state.phase === 'stopped'
              ? 'Stopped.'
              : 'Connecting…'
    const count = `${entries.length} manifest${entries.length === 1 ? '' : 's'} in the last hour.`
    const listing = ctx.feed.loadError
      ? ' The last hour could not be listed; showing new manifests only.'
      : ''
    const text = `${live} ${count}${listing}`
    if (status.textContent !== text) status.textContent = text
    const wanted = entries.slice(0, SHOWN)
    if (wanted.length === 0) {
      if (list.firstChild !== empty) replaceChildren(list, empty)
      return
    }
    empty.remove()
    const keep = new Set<string>()
    wanted.forEach((entry, index) => {
      const id = entry.manifest.manifest_id
      keep.add(id)
      let item = rendered.get(id)
      if (!item) {
        item = feedItem(entry, Date.now())
        rendered.set(id, item)
      }
      const here = list.children[index] ?? null
      if (here !== item) list.insertBefore(item, here)
    })
    for (const [id, item] of rendered) {
      if (keep.has(id)) continue
      item.remove()
      rendered.delete(id)
    }
  }
  draw()
  ctx.onLeave(ctx.feed.subscribe(draw))
}

function feedItem(entry: FeedEntry, now: number): HTMLElement {
  const manifest = entry.manifest
  const target = caseOf(manifest)
  const fresh = entry.arrivedAt !== null && now - entry.arrivedAt < FRESH_MS
  const newChip = fresh ? h('span', { class: 'chip new' }, 'new') : null
  const item = h(
    'li',
    { class: fresh ? 'feed-item fresh' : 'feed-item', 'data-manifest-id': manifest.manifest_id },
    h(
      'div',
      { class: 'feed-main' },
      verdictBadge(manifest.verdict),
      directiveBadge(manifest.directive),
      h('a', { href: target.href, class: 'feed-case' }, target.label),
    ),
    h(
      'div',
      { class: 'feed-meta' },
      h('span', { class: 'chip' }, target.kindLabel),
      timeOf(manifest.issued_at),
      entry.seq === null ? null : h('span', { class: 'seq' }, `seq ${entry.seq}`),
      newChip,
    ),
  )
  if (fresh) {
    setTimeout(() => {
      item.classList.remove('fresh')
      newChip?.remove()
    }, FRESH_MS)
  }
  return item
}
