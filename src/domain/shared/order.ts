/**
 * The one string order of every list Arbiter returns: UTF-16 code units, which is JavaScript's default
 * `sort()` order and what `<` compares. Locale-aware comparison would make the order depend on the machine.
 */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** A comparator on one string field, e.g. `byField('orchestrator_id')`. */
export function byField<K extends string>(field: K): (x: Record<K, string>, y: Record<K, string>) => number {
  return (x, y) => compareCodeUnits(x[field], y[field])
}

/** Sorted by UTF-16 code units, duplicates removed. */
export function sortedUnique(values: readonly string[]): string[] {
  return [...new Set(values)].sort()
}
