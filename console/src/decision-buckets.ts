/** Decisions per minute by verdict over a trailing window: what the console's chart draws. */
export interface Decision {
  issued_at: string
  verdict: string
}

export interface DecisionBuckets {
  /** Start of each minute, in Unix seconds, oldest first (uPlot's x axis). */
  minutes: number[]
  /** One series per verdict seen in the window, sorted by verdict; `counts[i]` belongs to `minutes[i]`. */
  series: { verdict: string; counts: number[] }[]
}

const MINUTE_MS = 60_000

/**
 * Buckets decisions into the `windowMinutes` whole minutes ending with the current one. Decisions outside the
 * window (or with an unreadable time) are left out.
 */
export function decisionsPerMinute(
  decisions: Decision[],
  nowMs: number,
  windowMinutes = 60,
): DecisionBuckets {
  const lastMinute = Math.floor(nowMs / MINUTE_MS) * MINUTE_MS
  const firstMinute = lastMinute - (windowMinutes - 1) * MINUTE_MS
  const minutes = Array.from({ length: windowMinutes }, (_, i) => (firstMinute + i * MINUTE_MS) / 1000)
  const byVerdict = new Map<string, number[]>()
  for (const decision of decisions) {
    const at = Date.parse(decision.issued_at)
    if (Number.isNaN(at)) continue
    const index = Math.floor((at - firstMinute) / MINUTE_MS)
    if (index < 0 || index >= windowMinutes) continue
    let counts = byVerdict.get(decision.verdict)
    if (!counts) {
      counts = new Array<number>(windowMinutes).fill(0)
      byVerdict.set(decision.verdict, counts)
    }
    counts[index] = (counts[index] ?? 0) + 1
  }
  const series = [...byVerdict.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([verdict, counts]) => ({ verdict, counts }))
  return { minutes, series }
}
