// RFC 3339 date-time; the fraction is kept as text because `Date` stops at milliseconds and PostgreSQL timestamps
// carry microseconds: two events 0.4 ms apart must not tie.
const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/

/** A point in time with sub-millisecond precision. */
export interface Instant {
  epochMs: number
  /** Fraction digits below the millisecond, trailing zeros removed, so strings compare as numbers. */
  subMs: string
}

/** Parses an RFC 3339 time (any offset notation); throws RangeError for text that is not a time. */
export function parseInstant(text: string): Instant {
  const match = RFC3339.exec(text)
  if (match) {
    const fraction = match[3] ?? ''
    const withMs = `${match[1]}T${match[2]}.${fraction.slice(0, 3).padEnd(3, '0')}${match[4]!.toUpperCase()}`
    const epochMs = Date.parse(withMs)
    if (!Number.isNaN(epochMs)) return { epochMs, subMs: fraction.slice(3).replace(/0+$/, '') }
  }
  const epochMs = Date.parse(text)
  // A time that does not parse would silently reorder whatever is sorted by it; refuse it instead.
  if (Number.isNaN(epochMs)) throw new RangeError(`not an RFC 3339 time: ${JSON.stringify(text)}`)
  return { epochMs, subMs: '' }
}

/** Earlier first, whatever the offset notation. */
export function compareInstants(x: Instant, y: Instant): number {
  if (x.epochMs !== y.epochMs) return x.epochMs - y.epochMs
  return x.subMs < y.subMs ? -1 : x.subMs > y.subMs ? 1 : 0
}
