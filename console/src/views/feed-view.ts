import { directiveBadge, h, replaceChildren, timeOf, verdictBadge } from '../dom.ts'
import {
  type FeedFilter,
  isFiltered,
  kindOptions,
  matchesFilter,
  NO_FILTER,
  TIME_RANGES,
} from '../feed-filter.ts'
import type { FeedEntry } from '../manifest-feed.ts'
import { caseOf } from '../shapes.ts'
import { VERDICTS_BY_KIND } from '../verdict-colours.ts'
import type { View } from '../view.ts'

const SHOWN = 200
/** The filter outlives a visit to another screen, for the tab's life. */
let lastFilter: FeedFilter = { ...NO_FILTER }

/** A manifest that arrived this recently is marked as new. */
const FRESH_MS = 10_000

/** The live feed: every manifest as it is signed, newest first. */
export const feedView: View = (ctx, main) => {
  const status = h('p', { class: 'feed-status', role: 'status' })
  const filter: FeedFilter = { ...lastFilter }
  const filters = feedFilters(filter, () => {
    lastFilter = { ...filter }
    draw()
  })
  const list = h('ol', { class: 'feed', 'aria-label': 'Manifests, newest first' })
  main.append(
    h(
      'p',
      { class: 'lead' },
      'Every signed manifest as Arbiter issues it, newest first: the last hour, then live over the manifest stream. ',
      'After a dropped connection the stream resumes right after the last manifest received.',
    ),
    filters,
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
    const { entries: all, state } = ctx.feed
    filters.refreshChoices(all)
    const now = Date.now()
    const entries = all.filter((entry) => matchesFilter(entry.manifest, filter, now))
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
    const count = isFiltered(filter)
      ? `${entries.length} of ${all.length} manifest${all.length === 1 ? '' : 's'} of the last hour match the filters.`
      : `${entries.length} manifest${entries.length === 1 ? '' : 's'} in the last hour.`
    const listing = ctx.feed.loadError
      ? ' The last hour could not be listed; showing new manifests only.'
      : ''
    const text = `${live} ${count}${listing}`
    if (status.textContent !== text) status.textContent = text
    const wanted = entries.slice(0, SHOWN)
    if (wanted.length === 0) {
      empty.textContent =
        all.length > 0
          ? 'No manifest matches the filters.'
          : 'No manifests yet. New ones appear here as soon as they are signed.'
      if (list.firstChild !== empty) replaceChildren(list, empty)
      for (const item of rendered.values()) item.remove()
      rendered.clear()
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
  // The time range slides even when nothing arrives.
  const timer = setInterval(draw, 15_000)
  ctx.onLeave(() => clearInterval(timer))
}

/** The filter bar; its kind and sub-agent choices follow the manifests seen. */
type FeedFilters = HTMLFormElement & { refreshChoices(entries: FeedEntry[]): void }

/** The filter bar: kind, verdict, sub-agent and time range; every change redraws the feed at once. */
function feedFilters(filter: FeedFilter, changed: () => void): FeedFilters {
  const select = (
    label: string,
    options: [string, string][],
    value: string,
    onChange: (v: string) => void,
  ) => {
    const element = h(
      'select',
      { 'aria-label': label },
      options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)),
    )
    element.addEventListener('change', () => onChange(element.value))
    return { element, field: h('label', { class: 'filter' }, h('span', null, label), element) }
  }
  const verdictOptions = (kind: string): [string, string][] => {
    const verdicts = kind
      ? (VERDICTS_BY_KIND[kind] ?? [])
      : [...new Set(Object.values(VERDICTS_BY_KIND).flat())].sort()
    return [['', 'All verdicts'], ...verdicts.map((v): [string, string] => [v, v])]
  }
  const verdict = select('Verdict', verdictOptions(filter.kind), filter.verdict, (v) => {
    filter.verdict = v
    changed()
  })
  const kind = select('Kind', kindOptions([], filter.kind), filter.kind, (v) => {
    filter.kind = v as FeedFilter['kind']
    // A verdict of another kind would hide everything: the list offers this kind's verdicts only.
    if (filter.verdict && !verdictOptions(v).some(([option]) => option === filter.verdict))
      filter.verdict = ''
    verdict.element.replaceChildren(
      ...verdictOptions(v).map(([value, text]) =>
        h('option', { value, selected: value === filter.verdict }, text),
      ),
    )
    changed()
  })
  const range = select(
    'Time range',
    TIME_RANGES.map((m): [string, string] => [String(m), m === 60 ? 'Last hour' : `Last ${m} minutes`]),
    String(filter.withinMinutes),
    (v) => {
      filter.withinMinutes = Number(v)
      changed()
    },
  )
  const subagents = h('datalist', { id: 'feed-subagents' })
  const subagent = h('input', {
    type: 'search',
    list: 'feed-subagents',
    value: filter.subagent,
    placeholder: 'any',
    'aria-label': 'Sub-agent',
    autocomplete: 'off',
  })
  subagent.addEventListener('input', () => {
    filter.subagent = subagent.value.trim()
    changed()
  })
  const clear = h('button', { type: 'button', class: 'secondary' }, 'Clear filters')
  clear.addEventListener('click', () => {
    Object.assign(filter, NO_FILTER)
    kind.element.value = ''
    verdict.element.replaceChildren(
      ...verdictOptions('').map(([value, text]) => h('option', { value }, text)),
    )
    verdict.element.value = ''
    range.element.value = String(NO_FILTER.withinMinutes)
    subagent.value = ''
    changed()
  })
  const form = h(
    'form',
    { class: 'feed-filters', 'aria-label': 'Filter the feed' },
    kind.field,
    verdict.field,
    h('label', { class: 'filter' }, h('span', null, 'Sub-agent'), subagent),
    range.field,
    subagents,
    clear,
  ) as FeedFilters
  form.addEventListener('submit', (event) => event.preventDefault())
  let known = ''
  let knownKinds = ''
  form.refreshChoices = (entries) => {
    const kinds = kindOptions(
      entries.map((entry) => entry.manifest),
      filter.kind,
    )
    const kindKey = kinds.map(([value]) => value).join('\n')
    if (kindKey !== knownKinds) {
      knownKinds = kindKey
      kind.element.replaceChildren(
        ...kinds.map(([value, text]) => h('option', { value, selected: value === filter.kind }, text)),
      )
    }
    const ids = [
      ...new Set(
        entries
          .map((entry) => entry.manifest.subagent_id)
          .filter((id): id is string => typeof id === 'string'),
      ),
    ].sort()
    const key = ids.join('\n')
    if (key === known) return
    known = key
    subagents.replaceChildren(...ids.map((id) => h('option', { value: id })))
  }
  return form
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
      target.href === null
        ? h('span', { class: 'feed-case' }, target.label)
        : h('a', { href: target.href, class: 'feed-case' }, target.label),
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
