/**
 * Which sources are "the same source". Two workers that quote one press release are one witness, not
 * two, so agreement is counted over source identities rather than over claims. A source is identified
 * by its `content_digest` when the worker gave one (the bytes it read), otherwise by its URI written
 * one way: the spellings of a URL that reach the same document must compare equal.
 */

/** A source as a claim cites it; only the members that identify it matter here. */
export interface SourceRef {
  uri: string
  content_digest?: string | null | undefined
}

// Campaign-tracking parameters name the link someone clicked, not the document.
// Case-sensitive on purpose: `UTM_x` is some site's own parameter.
const TRACKING_PARAMETER_PREFIX = 'utm_'

/**
 * The URI in one canonical spelling. An absolute URL (per the WHATWG URL parser, as `new URL` reads
 * it) is re-serialised with:
 * - scheme and host lower-cased, for every scheme (the parser already lower-cases the host, and
 *   applies IDNA, only for http(s), ws(s), ftp and file; `crm://Opp/1` needs it done here);
 * - the scheme's default port dropped (the parser does this for the schemes it knows);
 * - the fragment dropped: it points inside the document, not at another one;
 * - `utm_*` query parameters dropped, the rest sorted by name (stable, so repeated names keep their
 *   order) and re-serialised by `URLSearchParams`, whose form encoding writes `%20` as `+` and a
 *   bare `?a` as `?a=`; a query left empty loses its `?`;
 * - one trailing `/` dropped from the path unless the path is just `/` (`https://x.com/a/` is
 *   `https://x.com/a`, `https://x.com/` stays).
 *
 * Percent-encoding is kept as written (`%7E` and `~` stay different) — the parser does not decode it.
 * Anything the parser refuses (`vantage.com/pricing`, `opp 118204 note`) is only trimmed.
 */
export function normalizeSourceUri(uri: string): string {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return uri.trim()
  }
  url.hash = ''
  const host = url.hostname
  if (host !== host.toLowerCase()) url.hostname = host.toLowerCase()

  const params = url.searchParams
  for (const name of new Set(params.keys())) {
    if (name.startsWith(TRACKING_PARAMETER_PREFIX)) params.delete(name)
  }
  // Called even when nothing was deleted: sorting re-serialises the query, which is what makes
  // `?b=1&a=2`, `?a=2&b=1` and `?a=2&b=1&` one spelling, and turns a bare `?` into none.
  params.sort()

  const href = url.href
  const path = url.pathname
  if (path.length > 1 && path.endsWith('/')) {
    // The path is what precedes the query in the serialisation (the fragment is gone), so the
    // character before `search` is the trailing slash. Done on the text rather than with the
    // `pathname` setter because the setter ignores URLs with an opaque path (`urn:a/`).
    const search = url.search
    return href.slice(0, href.length - search.length - 1) + search
  }
  return href
}

/** The identity echoes and clusters are computed over: the content digest if given, else the normalised URI. */
export function sourceIdentity(source: SourceRef): string {
  return source.content_digest ?? normalizeSourceUri(source.uri)
}
