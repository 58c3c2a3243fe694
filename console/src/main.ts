import { Api, isAbort, problemAlert } from './api.ts'
import { h, replaceChildren } from './dom.ts'
import type { StreamState } from './event-stream.ts'
import { ManifestFeed } from './manifest-feed.ts'
import type { View, ViewContext } from './view.ts'
import { chartView } from './views/chart-view.ts'
import { escalationsView } from './views/escalations-view.ts'
import { fanoutCaseView } from './views/fanout-case-view.ts'
import { feedView } from './views/feed-view.ts'
import { keyEntryView } from './views/key-entry-view.ts'
import { logView } from './views/log-view.ts'
import { outcomeCaseView } from './views/outcome-case-view.ts'
import { manifestProofView, recordProofView } from './views/proof-view.ts'
import { reviewCaseView } from './views/review-case-view.ts'
import { webhooksView } from './views/webhooks-view.ts'

/** sessionStorage: the key lives as long as the tab and is never written anywhere more lasting. */
const KEY_STORAGE = 'arbiter.console.key'
const UUID = '([0-9a-fA-F-]{36})'

const ROUTES: { pattern: RegExp; title: string; nav: string | null; view: View }[] = [
  { pattern: /^#\/feed$/, title: 'Live feed', nav: '#/feed', view: feedView },
  { pattern: /^#\/escalations$/, title: 'Escalations', nav: '#/escalations', view: escalationsView },
  { pattern: new RegExp(`^#/outcomes/${UUID}$`), title: 'Outcome', nav: null, view: outcomeCaseView },
  { pattern: new RegExp(`^#/fanouts/${UUID}$`), title: 'Fan-out', nav: null, view: fanoutCaseView },
  { pattern: new RegExp(`^#/reviews/${UUID}$`), title: 'Review', nav: null, view: reviewCaseView },
  { pattern: /^#\/proofs\/(\d{1,15})$/, title: 'Inclusion proof', nav: null, view: recordProofView },
  {
    pattern: new RegExp(`^#/proofs/manifest/${UUID}$`),
    title: 'Inclusion proof',
    nav: null,
    view: manifestProofView,
  },
  { pattern: /^#\/chart$/, title: 'Decisions per minute', nav: '#/chart', view: chartView },
  { pattern: /^#\/log$/, title: 'Audit log', nav: '#/log', view: logView },
  { pattern: /^#\/webhooks$/, title: 'Webhooks', nav: '#/webhooks', view: webhooksView },
]

const main = document.getElementById('main') as HTMLElement
const nav = document.getElementById('nav') as HTMLElement
const sessionBar = document.getElementById('session') as HTMLElement
const streamStatus = document.getElementById('stream-state') as HTMLElement

let session: { api: Api; feed: ManifestFeed } | null = null
let leaving: { controller: AbortController; cleanups: (() => void)[] } | null = null

function storedKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_STORAGE)
  } catch {
    return null
  }
}

function startSession(key: string, moveFocus = false): void {
  const api = new Api(key)
  const feed = new ManifestFeed(api)
  session = { api, feed }
  feed.subscribe(() => showStreamState(feed.state))
  void feed.start()
  nav.hidden = false
  sessionBar.hidden = false
  render(moveFocus)
}

function endSession(): void {
  try {
    sessionStorage.removeItem(KEY_STORAGE)
  } catch {
    // Storage may be unavailable (privacy modes); the key was only in memory then.
  }
  session?.feed.stop()
  session = null
  render(true)
}

function showStreamState(state: StreamState): void {
  const text =
    state.phase === 'open'
      ? 'Live'
      : state.phase === 'connecting'
        ? 'Connecting…'
        : state.phase === 'waiting'
          ? `Reconnecting in ${Math.max(1, Math.round((state.retryAt - Date.now()) / 1000))} s`
          : state.phase === 'refused'
            ? `Stream refused (${state.status})`
            : 'Stopped'
  if (streamStatus.textContent !== text) streamStatus.textContent = text
  streamStatus.dataset['phase'] = state.phase
}

function leaveCurrentView(): void {
  if (!leaving) return
  leaving.controller.abort()
  for (const cleanup of leaving.cleanups) cleanup()
  leaving = null
}

/** Draws the screen the location names; `moveFocus` after a navigation, so keyboard and screen-reader users land on it. */
function render(moveFocus: boolean): void {
  leaveCurrentView()
  if (!session) {
    nav.hidden = true
    sessionBar.hidden = true
    document.title = 'Enter your API key · Arbiter ops console'
    keyEntryView(main, async (key) => {
      // Any valid key may list manifests: that tells a wrong key (401) from a right one before it is kept.
      await new Api(key).get('/v1/manifests?limit=1')
      try {
        sessionStorage.setItem(KEY_STORAGE, key)
      } catch {
        // Without storage the key lasts until the page reloads.
      }
      startSession(key, true)
    })
    if (moveFocus) main.focus()
    return
  }
  const hash = location.hash
  const route = ROUTES.find((r) => r.pattern.test(hash))
  if (!route) {
    location.replace('#/feed')
    return
  }
  const params = route.pattern.exec(hash)?.slice(1) ?? []
  for (const link of nav.querySelectorAll('a')) {
    if (link.getAttribute('href') === route.nav) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  document.title = `${route.title} · Arbiter ops console`
  const heading = h('h1', { tabindex: -1 }, route.title)
  replaceChildren(main, heading)
  const controller = new AbortController()
  const current = { controller, cleanups: [] as (() => void)[] }
  leaving = current
  const ctx: ViewContext = {
    api: session.api,
    feed: session.feed,
    signal: controller.signal,
    onLeave: (cleanup) => current.cleanups.push(cleanup),
    heading,
    reload: () => render(false),
  }
  if (moveFocus) heading.focus()
  Promise.resolve()
    .then(() => route.view(ctx, main, params))
    .catch((err: unknown) => {
      if (isAbort(err) || controller.signal.aborted) return
      main.append(problemAlert(err, 'open this screen'))
    })
}

document.getElementById('forget-key')?.addEventListener('click', endSession)
// The skip link targets the main region without touching the location (the location names the screen).
document.querySelector('.skip-link')?.addEventListener('click', (event) => {
  event.preventDefault()
  main.focus()
})
window.addEventListener('hashchange', () => {
  if (location.hash.startsWith('#/')) render(true)
})

const key = storedKey()
if (key) startSession(key)
else render(false)
