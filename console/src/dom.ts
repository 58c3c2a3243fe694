/**
 * A small element builder. Everything the console shows comes from API data, so text is always set as text
 * (never parsed as HTML) and no element gets a `style` attribute (the page's CSP refuses inline style).
 */
export type Child = Node | string | number | null | undefined | false | Child[]
type AttrValue = string | number | boolean | null | undefined
type Listener = (event: Event) => void
export type Attrs = Record<string, AttrValue | Listener>

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (typeof value === 'function') {
      element.addEventListener(name.replace(/^on/, ''), value)
    } else if (value === true) {
      element.setAttribute(name, '')
    } else if (value !== false && value !== null && value !== undefined) {
      element.setAttribute(name, String(value))
    }
  }
  append(element, children)
  return element
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    if (Array.isArray(child)) append(parent, child)
    else parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)))
  }
}

export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren()
  append(parent, children)
}

const timeFormat = new Intl.DateTimeFormat(undefined, {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
})
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })

/** A `<time>` showing the local clock time, with the full timestamp as its machine-readable value. */
export function timeOf(iso: string | null | undefined, withDate = false): HTMLElement | string {
  if (!iso) return '—'
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) return iso
  return h(
    'time',
    { datetime: iso, title: iso },
    withDate ? dateTimeFormat.format(date) : timeFormat.format(date),
  )
}

/** "4 s", "12 min", "3 h": how long ago `iso` was, relative to `nowMs`. */
export function ageOf(iso: string, nowMs = Date.now()): string {
  const seconds = Math.max(0, Math.round((nowMs - Date.parse(iso)) / 1000))
  if (seconds < 90) return `${seconds} s`
  const minutes = Math.round(seconds / 60)
  if (minutes < 90) return `${minutes} min`
  const hours = Math.round(minutes / 60)
  if (hours < 48) return `${hours} h`
  return `${Math.round(hours / 24)} d`
}

/** A hash shortened for reading, the whole value kept in the title and for copying. */
export function hashText(hash: string | null | undefined, keep = 10): HTMLElement | string {
  if (!hash) return '—'
  const bare = hash.startsWith('sha256:') ? hash.slice(7) : hash
  const short = bare.length > keep + 2 ? `${bare.slice(0, keep)}…` : bare
  return h('code', { class: 'hash', title: hash }, short)
}

export function jsonBlock(value: unknown): HTMLElement {
  return h('pre', { class: 'json' }, h('code', null, JSON.stringify(value, null, 2) ?? 'undefined'))
}

function token(value: string): string {
  return value.toLowerCase().replace(/[^a-z0-9]+/g, '-')
}

export function verdictBadge(verdict: string | null | undefined): HTMLElement {
  return h('span', { class: `badge verdict verdict-${token(verdict ?? 'none')}` }, verdict ?? '—')
}

export function directiveBadge(directive: string | null | undefined): HTMLElement {
  return h('span', { class: `badge directive directive-${token(directive ?? 'none')}` }, directive ?? '—')
}

export function statusBadge(status: string | null | undefined): HTMLElement {
  return h('span', { class: `badge status status-${token(status ?? 'none')}` }, status ?? '—')
}

/** A definition list from label/value pairs; values may be nodes. */
export function facts(pairs: [string, Child][]): HTMLElement {
  return h(
    'dl',
    { class: 'facts' },
    pairs.map(([label, value]) => h('div', null, h('dt', null, label), h('dd', null, value))),
  )
}

/**
 * A wide table in a region that scrolls on its own on a narrow screen; the region is focusable so keyboard
 * users can scroll it too.
 */
export function scrollingTable(label: string, table: HTMLTableElement): HTMLElement {
  return h('div', { class: 'table-scroll', role: 'region', 'aria-label': label, tabindex: 0 }, table)
}

export function section(title: string, ...children: Child[]): HTMLElement {
  const id = `s-${token(title)}`
  return h('section', { 'aria-labelledby': id }, h('h2', { id }, title), ...children)
}
