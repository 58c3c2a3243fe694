import { KNOWN_MANIFEST_KINDS, type ManifestCommon, type ManifestKind, manifestKind } from './shapes.ts'

/** What the operator narrowed the live feed to; empty strings mean "any". */
export interface FeedFilter {
  kind: ManifestKind | ''
  verdict: string
  /** A sub-agent id, matched exactly (outcomes carry one; fan-outs and reviews do not). */
  subagent: string
  /** Only manifests issued within this many minutes before now. */
  withinMinutes: number
}

export const NO_FILTER: FeedFilter = { kind: '', verdict: '', subagent: '', withinMinutes: 60 }

/** The time ranges offered, in minutes: the feed holds the last hour. */
export const TIME_RANGES = [5, 15, 30, 60] as const

export function matchesFilter(
  manifest: ManifestCommon & { subagent_id?: string },
  filter: FeedFilter,
  nowMs: number,
): boolean {
  if (filter.kind && manifestKind(manifest) !== filter.kind) return false
  if (filter.verdict && manifest.verdict !== filter.verdict) return false
  if (filter.subagent && manifest.subagent_id !== filter.subagent) return false
  const issued = Date.parse(manifest.issued_at)
  if (Number.isNaN(issued)) return true
  return nowMs - issued <= filter.withinMinutes * 60_000
}

export function isFiltered(filter: FeedFilter): boolean {
  return (
    filter.kind !== '' ||
    filter.verdict !== '' ||
    filter.subagent !== '' ||
    filter.withinMinutes !== NO_FILTER.withinMinutes
  )
}

const KIND_LABELS: Readonly<Record<string, string>> = {
  outcome: 'Outcomes',
  reconciliation: 'Fan-outs',
  review: 'Reviews',
}

/**
 * The kind filter's options: any kind, the known kinds, then every other kind seen in the feed (or chosen) under
 * its own name.
 */
export function kindOptions(
  manifests: Iterable<ManifestCommon>,
  chosen: ManifestKind | '' = '',
): [ManifestKind | '', string][] {
  const others = new Set<string>()
  for (const manifest of manifests) others.add(manifestKind(manifest))
  if (chosen) others.add(chosen)
  for (const kind of KNOWN_MANIFEST_KINDS) others.delete(kind)
  return [
    ['', 'All kinds'],
    ...KNOWN_MANIFEST_KINDS.map((kind): [ManifestKind, string] => [kind, KIND_LABELS[kind] ?? kind]),
    ...[...others].sort().map((kind): [ManifestKind, string] => [kind, kind]),
  ]
}
