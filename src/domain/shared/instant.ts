/**
 * RFC 3339 timestamps compared as instants, whatever their offset notation, and finer than
 * `Date`'s milliseconds: the fraction below the millisecond is kept as text because PostgreSQL
 * timestamps carry microseconds, and two events 0.4 ms apart must not tie.
 */

// RFC 3339 date-time, with the lower-case `t`/`z` and the space separator RFC 3339 permits.
const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/

export interface Instant {
  epochMs: number
  /** Fraction digits below the millisecond, trailing zeros removed, so strings compare as numbers. */
  subMs: string
}

/**
 * Parses an RFC 3339 time. Throws a RangeError naming `what` for text that is not a time:
 * a value that silently became NaN would reorder whatever is sorted by it.
 */
export function parseInstant(text: string, what = 'value'): Instant {
  const match = RFC3339.exec(text)
  if (match) {
    const fraction = match[3] ?? ''
    const withMs = `${match[1]}T${match[2]}.${fraction.slice(0, 3).padEnd(3, '0')}${match[4]!.toUpperCase()}`
    const epochMs = Date.parse(withMs)
    if (!Number.isNaN(epochMs)) return { epochMs, subMs: fraction.slice(3).replace(/0+$/, '') }
  }
  const epochMs = Date.parse(text)
  if (Number.isNaN(epochMs)) throw new RangeError(`${what} is not an RFC 3339 time: ${JSON.stringify(text)}`)
  return { epochMs, subMs: '' }
}

/** Negative when `x` is earlier, positive when later, 0 for the same instant. */
export function compareInstants(x: Instant, y: Instant): number {
  if (x.epochMs !== y.epochMs) return x.epochMs - y.epochMs
  return x.subMs < y.subMs ? -1 : x.subMs > y.subMs ? 1 : 0
}
