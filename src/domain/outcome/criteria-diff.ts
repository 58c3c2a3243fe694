import type { JsonValue } from '../shared/canonical-json.ts'
import { diffJson, type JsonDifference } from '../shared/json-diff.ts'

/**
 * A pair's `criteria_divergence`: null unless both criteria documents are known (an orchestrator that submitted
 * only `success_criterion_hash` has none) and differ; otherwise every point where they differ, as JSON Pointers.
 */
export function criteriaDivergence(
  a: JsonValue | undefined,
  b: JsonValue | undefined,
): JsonDifference[] | null {
  if (a === undefined || b === undefined) return null
  const differences = diffJson(a, b)
  return differences.length === 0 ? null : differences
}
