import type { Api } from './api.ts'
import type { ManifestFeed } from './manifest-feed.ts'

/** What a screen gets: the API under the operator's key, the live feed, and its own lifetime. */
export interface ViewContext {
  api: Api
  feed: ManifestFeed
  /** Aborted when the operator leaves the screen: pending requests are cancelled with it. */
  signal: AbortSignal
  /** Runs when the operator leaves the screen (timers, subscriptions, charts). */
  onLeave(cleanup: () => void): void
  /** The screen's heading, already in the page; a view may refine its text. */
  heading: HTMLHeadingElement
  /** Re-renders the current screen (e.g. after a resolution changed the case). */
  reload(): void
}

export type View = (ctx: ViewContext, main: HTMLElement, params: string[]) => void | Promise<void>
