/**
 * RFC 8785 (JCS) canonical JSON of a parsed JSON value: members sorted by UTF-16 code units, no white space,
 * strings and numbers as ECMAScript's JSON.stringify writes them (which is what JCS prescribes). Arbiter hashes
 * evidence items and audit records this way, so the console can match an evidence hash to its item and recompute
 * a log leaf itself.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('JSON numbers are finite')
    return JSON.stringify(value)
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`
  }
  throw new TypeError(`not a JSON value: ${typeof value}`)
}
