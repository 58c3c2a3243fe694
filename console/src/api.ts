import { type Child, h } from './dom.ts'
import type { Page } from './shapes.ts'

/** An RFC 9457 problem as Arbiter sends it. */
export interface Problem {
  type?: string
  title?: string
  status?: number
  detail?: string
  errors?: { path: string; message: string }[]
  [extension: string]: unknown
}

/** A refused or failed API call; `status` 0 means Arbiter could not be reached. */
export class ApiError extends Error {
  override name = 'ApiError'
  constructor(
    readonly status: number,
    readonly problem: Problem | null,
    readonly method: string,
    readonly path: string,
  ) {
    super(problem?.detail ?? problem?.title ?? `${method} ${path} failed with ${status}`)
  }
}

/** The API as the operator's key sees it: every call carries `Authorization: Bearer <key>`. */
export class Api {
  constructor(private readonly key: string) {}

  get authorization(): Record<string, string> {
    return { authorization: `Bearer ${this.key}` }
  }

  get<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.call<T>('GET', path, undefined, signal)
  }

  post<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.call<T>('POST', path, body, signal)
  }

  patch<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.call<T>('PATCH', path, body, signal)
  }

  /** Follows `next_cursor` until the end or `maxPages` pages. */
  async getAll<T>(path: string, maxPages: number, signal?: AbortSignal): Promise<T[]> {
    const items: T[] = []
    let cursor: string | null = null
    for (let page = 0; page < maxPages; page++) {
      const separator = path.includes('?') ? '&' : '?'
      const url = cursor === null ? path : `${path}${separator}cursor=${encodeURIComponent(cursor)}`
      const answer: Page<T> = await this.get<Page<T>>(url, signal)
      items.push(...answer.items)
      cursor = answer.next_cursor
      if (cursor === null) break
    }
    return items
  }

  private async call<T>(method: string, path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    let response: Response
    try {
      response = await fetch(path, {
        method,
        headers: {
          ...this.authorization,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
        signal: signal ?? null,
      })
    } catch (err) {
      if (signal?.aborted) throw err
      throw new ApiError(0, null, method, path)
    }
    const text = await response.text()
    let parsed: unknown = null
    try {
      parsed = text === '' ? null : JSON.parse(text)
    } catch {
      parsed = null
    }
    if (!response.ok) {
      const problem = parsed && typeof parsed === 'object' ? (parsed as Problem) : null
      throw new ApiError(response.status, problem, method, path)
    }
    return parsed as T
  }
}

export function isAbort(err: unknown): boolean {
  return err instanceof DOMException && err.name === 'AbortError'
}

/**
 * A refused call, explained to a person: what happened, why, and what to do. `action` completes "… may not
 * <action>" (e.g. "resolve escalations").
 */
export function problemAlert(err: unknown, action: string): HTMLElement {
  if (!(err instanceof ApiError)) {
    return alertBox('Something went wrong', [err instanceof Error ? err.message : String(err)])
  }
  const detail = err.problem?.detail
  const fieldErrors: Child =
    err.problem?.errors && err.problem.errors.length > 0
      ? h(
          'ul',
          null,
          err.problem.errors.map((e) => h('li', null, h('code', null, e.path || '/'), ': ', e.message)),
        )
      : null
  switch (err.status) {
    case 0:
      return alertBox('Arbiter could not be reached', [
        'The request did not get an answer. Check the connection to Arbiter and try again.',
      ])
    case 401:
      return alertBox('The API key was refused (401)', [
        'Arbiter does not know this key, or it has been revoked. Use “Change key” to enter a valid one.',
        detail ? h('span', { class: 'detail' }, detail) : null,
      ])
    case 403:
      return alertBox('This key may not do that (403)', [
        `Your key is valid but its role may not ${action}. `,
        'That needs a key with the ops or admin role; dashboard and orchestrator keys cannot. ',
        'Ask an admin for an ops key, then use “Change key”.',
        detail ? h('span', { class: 'detail' }, `Arbiter said: ${detail}`) : null,
      ])
    case 404:
      return alertBox('Not found (404)', [detail ?? 'Arbiter has no such resource.'])
    case 409:
      return alertBox('The case changed (409)', [
        detail ?? 'The case is no longer in a state that allows this.',
        ' Reload the case to see its current state.',
      ])
    case 400:
    case 422:
      return alertBox(`Arbiter refused the request (${err.status})`, [detail ?? '', fieldErrors])
    case 429:
    case 503:
      return alertBox(`Arbiter is busy (${err.status})`, [detail ?? 'Try again in a moment.'])
    default:
      return alertBox(`The request failed (${err.status})`, [detail ?? err.message, fieldErrors])
  }
}

export function alertBox(title: string, body: Child[]): HTMLElement {
  return h(
    'div',
    { class: 'alert', role: 'alert' },
    h('p', { class: 'alert-title' }, title),
    h('div', null, body),
  )
}
