/**
 * Probe URL templates: `{{params.<name>}}`, `{{outcome.subagent_id}}` and `{{outcome.run_id}}`.
 *
 * The admin who registers a probe decides where it goes, and with it the secrets its headers carry;
 * whoever creates an outcome only supplies values. So a template may sit only in the URL's path or query —
 * never in its scheme, userinfo, host, port or fragment — and every value is percent-encoded down to
 * RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`). A value therefore can neither end its path
 * segment or query parameter (`/`, `\`, `?`, `#`, `&`, `=`, `;`) nor turn into a space (`+`). The one thing
 * encoding cannot stop is a value that makes a whole path segment `.` or `..`: URL parsers remove such
 * segments in every spelling (`%2e` included), moving the request elsewhere on the host, so that is refused.
 */

// `{{ ... }}` blocks; what may sit inside is checked separately so a bad template
// gets a precise message instead of being passed through as literal text.
const TEMPLATE_BLOCK = /\{\{(.*?)\}\}/g
const TEMPLATE_EXPR = /^(params\.[A-Za-z_][A-Za-z0-9_-]*|outcome\.subagent_id|outcome\.run_id)$/

export type TemplateExpression =
  | { kind: 'param'; name: string }
  | { kind: 'outcome'; field: 'subagent_id' | 'run_id' }

function expressionOf(inner: string): TemplateExpression {
  return inner.startsWith('params.')
    ? { kind: 'param', name: inner.slice('params.'.length) }
    : { kind: 'outcome', field: inner === 'outcome.run_id' ? 'run_id' : 'subagent_id' }
}

/** Every template in `url`, in order; null when one of them is not allowed. */
export function parseTemplates(url: string): TemplateExpression[] | null {
  const found: TemplateExpression[] = []
  for (const match of url.matchAll(TEMPLATE_BLOCK)) {
    const inner = match[1] ?? ''
    if (!TEMPLATE_EXPR.test(inner)) return null
    found.push(expressionOf(inner))
  }
  return found
}

/** Replaces the i-th template with `replace(expression, i)`. Assumes `parseTemplates(url) !== null`. */
export function replaceTemplates(
  url: string,
  replace: (expr: TemplateExpression, index: number) => string,
): string {
  let index = 0
  return url.replace(TEMPLATE_BLOCK, (_block, inner: string) => replace(expressionOf(inner), index++))
}

/**
 * Where the parts of an http(s) URL lie in its text, read the way the WHATWG URL parser reads a special
 * scheme: after `scheme:` any run of `/` and `\`, then the authority up to the first `/`, `\`, `?` or `#`,
 * then the path up to the first `?` or `#`, the query up to `#`, the fragment.
 */
interface UrlLayout {
  schemeEnd: number
  authorityStart: number
  authorityEnd: number
  pathEnd: number
  fragmentStart: number
}

function layoutOf(url: string): UrlLayout {
  const schemeEnd = Math.max(url.indexOf(':'), 0)
  let i = schemeEnd + 1
  while (url[i] === '/' || url[i] === '\\') i++
  const authorityStart = i
  while (i < url.length && !'/\\?#'.includes(url[i] as string)) i++
  const authorityEnd = i
  while (i < url.length && url[i] !== '?' && url[i] !== '#') i++
  const pathEnd = i
  const hash = url.indexOf('#', pathEnd)
  return { schemeEnd, authorityStart, authorityEnd, pathEnd, fragmentStart: hash < 0 ? url.length : hash }
}

type UrlPart = 'scheme' | 'userinfo' | 'host' | 'port' | 'fragment' | 'path or query'

function partAt(url: string, layout: UrlLayout, at: number): UrlPart {
  if (at <= layout.schemeEnd) return 'scheme'
  if (at < layout.authorityEnd) {
    const authority = url.slice(layout.authorityStart, layout.authorityEnd)
    const offset = at - layout.authorityStart
    const atSign = authority.lastIndexOf('@')
    if (offset < atSign) return 'userinfo'
    // The port follows the last ':' outside an IPv6 literal's brackets.
    const hostStart = atSign + 1
    const portColon = authority.indexOf(':', Math.max(authority.lastIndexOf(']'), hostStart))
    return portColon >= 0 && offset > portColon ? 'port' : 'host'
  }
  return at >= layout.fragmentStart ? 'fragment' : 'path or query'
}

// WHATWG URL parsing silently drops tabs and line breaks anywhere and trims leading and trailing controls
// and spaces, so the text an admin reads would not be the URL requested (nor the layout read above).
function hasInvisibleText(url: string): boolean {
  if (url.startsWith(' ') || url.endsWith(' ')) return true
  for (let i = 0; i < url.length; i++) {
    const code = url.charCodeAt(i)
    if (code < 0x20 || code === 0x7f) return true
  }
  return false
}

// Stands in for the i-th template while the parser places it: lower-case letters and digits, unchanged in
// every part of a URL and never an IP literal.
const marker = (index: number) => `arbitertemplate${index}marker`

const outsideMessage = (part: string) =>
  `templates are allowed only in the url's path and query, not in its ${part}: ` +
  'the admin, not an outcome, decides where a probe and its secrets go'

/**
 * Null when `url` is an acceptable probe URL template, else the reason. Templates may only be
 * `{{params.<name>}}`, `{{outcome.subagent_id}}` and `{{outcome.run_id}}`, only in the path and query; with
 * each replaced by a placeholder the URL must parse as http(s) and carry no credentials (secrets belong in
 * `{env}` headers, never in a stored URL).
 */
export function validateProbeTemplate(url: string): string | null {
  if (parseTemplates(url) === null) {
    return 'templates may only be {{params.<name>}}, {{outcome.subagent_id}} or {{outcome.run_id}}'
  }
  if (hasInvisibleText(url)) {
    return 'url must not contain control characters, tabs or line breaks, nor start or end with a space'
  }
  const marked = replaceTemplates(url, (_expr, index) => marker(index))
  if (marked.includes('{{') || marked.includes('}}')) return 'unbalanced template braces in url'
  // Where each template sits, first as the text reads ...
  const layout = layoutOf(url)
  const starts = [...url.matchAll(TEMPLATE_BLOCK)].map((match) => match.index)
  for (const start of starts) {
    const part = partAt(url, layout, start)
    if (part !== 'path or query') return outsideMessage(part)
  }
  let parsed: URL
  try {
    parsed = new URL(marked)
  } catch {
    return 'url does not parse'
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'url scheme must be http or https'
  if (parsed.username !== '' || parsed.password !== '') {
    return 'url must not contain credentials; use a header with {"env": NAME}'
  }
  // ... then as the parser reads it: should the two ever disagree, the parser's reading is what is requested.
  const pathAndQuery = parsed.pathname + parsed.search
  for (let index = 0; index < starts.length; index++) {
    if (!pathAndQuery.includes(marker(index))) {
      return "a template does not stay in the url's path or query once the url is parsed (a '..' segment after it removes it)"
    }
  }
  return null
}

/** Percent-encodes everything but RFC 3986's unreserved characters. Throws URIError on a lone surrogate. */
export function encodeTemplateValue(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  )
}

// A segment URL parsers remove or use to climb: '.', '..' and their percent-encoded spellings.
const DOT_SEGMENT = /^(\.|%2e){1,2}$/i

export type RenderedUrl = { ok: true; url: string } | { ok: false; code: 'param_missing'; detail: string }

function scalarText(value: unknown): string | null {
  if (typeof value === 'string') return value
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : null
  if (typeof value === 'boolean') return String(value)
  return null
}

function templateName(expr: TemplateExpression): string {
  return expr.kind === 'param' ? `param ${expr.name}` : `outcome.${expr.field}`
}

/**
 * Fills the templates of a valid `template` (see `validateProbeTemplate`), each value encoded with
 * `encodeTemplateValue`. Strings, finite numbers and booleans only; anything else is missing. A dry run may
 * name no outcome (`outcome` null): then an outcome template has nothing to fill it.
 */
export function renderProbeUrl(
  template: string,
  params: Record<string, unknown>,
  outcome: { subagent_id: string; run_id: string } | null,
): RenderedUrl {
  const fail = (detail: string): RenderedUrl => ({ ok: false, code: 'param_missing', detail })
  const templates = parseTemplates(template)
  if (templates === null) return fail('url template contains an expression that is not allowed')
  const values: string[] = []
  for (const expr of templates) {
    if (expr.kind === 'outcome' && outcome === null) return fail(`outcome.${expr.field} is not given`)
    if (expr.kind === 'param' && !Object.hasOwn(params, expr.name))
      return fail(`param ${expr.name} is missing`)
    const text = scalarText(expr.kind === 'param' ? params[expr.name] : outcome?.[expr.field])
    if (text === null) return fail(`${templateName(expr)} is not a string, number or boolean`)
    try {
      values.push(encodeTemplateValue(text))
    } catch {
      return fail(`${templateName(expr)} is not valid Unicode`)
    }
  }
  const url = replaceTemplates(template, (_expr, index) => values[index] ?? '')

  // Encoded values hold no '/', '\', '?' or '#', so the template's path segments and the rendered ones pair up.
  const templateLayout = layoutOf(template)
  const renderedLayout = layoutOf(url)
  const templateSegments = template.slice(templateLayout.authorityEnd, templateLayout.pathEnd).split(/[/\\]/)
  const renderedSegments = url.slice(renderedLayout.authorityEnd, renderedLayout.pathEnd).split(/[/\\]/)
  for (const [i, segment] of templateSegments.entries()) {
    const rendered = renderedSegments[i] ?? ''
    if (!segment.includes('{{') || !DOT_SEGMENT.test(rendered)) continue
    const names = parseTemplates(segment)?.map(templateName).join(', ')
    return fail(`${names} would make a path segment '.' or '..', moving the request to another path`)
  }
  return { ok: true, url }
}
