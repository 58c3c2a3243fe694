/**
 * Which methods each registered path answers, so a request the router did not match can be told apart: a known
 * path with another method (405 with `Allow`) from a path that does not exist (404).
 */
export class RouteMethods {
  private readonly routes: { pattern: RegExp; methods: Set<string> }[] = []
  private readonly byUrl = new Map<string, Set<string>>()

  add(url: string, methods: string | readonly string[]): void {
    let known = this.byUrl.get(url)
    if (!known) {
      known = new Set()
      this.byUrl.set(url, known)
      this.routes.push({ pattern: patternOf(url), methods: known })
    }
    for (const method of typeof methods === 'string' ? [methods] : methods) known.add(method.toUpperCase())
    // fastify answers HEAD wherever it answers GET.
    if (known.has('GET')) known.add('HEAD')
  }

  /** The methods allowed on a concrete path (sorted), or an empty list for a path no route has. */
  allowed(path: string): string[] {
    const candidates = [path]
    try {
      const decoded = decodeURIComponent(path)
      if (decoded !== path) candidates.push(decoded)
    } catch {
      // A malformed %-escape matches no route; the raw path is still tried.
    }
    const methods = new Set<string>()
    for (const route of this.routes) {
      if (candidates.some((candidate) => route.pattern.test(candidate))) {
        for (const method of route.methods) methods.add(method)
      }
    }
    return [...methods].sort()
  }
}

// A fastify route path as a regular expression: `:name` (optionally `:name(regex)`) is one segment, `*` the rest.
function patternOf(url: string): RegExp {
  let source = ''
  for (let i = 0; i < url.length; ) {
    const rest = url.slice(i)
    const param = /^:[A-Za-z0-9_]+(\([^)]*\))?/.exec(rest)
    if (param) {
      source += param[1] ?? '[^/]+'
      i += param[0].length
    } else if (rest[0] === '*') {
      source += '.*'
      i += 1
    } else {
      source += rest[0]!.replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      i += 1
    }
  }
  return new RegExp(`^${source}$`)
}
