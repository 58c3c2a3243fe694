/**
 * The rules a fan-out's policy may name to choose among conflicting positions of one fact. Rules are
 * tried in the order the policy lists them; each looks only at the positions still tied after the
 * rules before it, and either leaves exactly one (it decides) or passes the tied best on to the next.
 */
import { compareInstants, type Instant, parseInstant } from '../shared/instant.ts'
import { normalizeSourceUri } from './source-identity.ts'
import type { PolicyRule } from './vocabulary.ts'

/** What the rules read of a position. */
export interface RankablePosition {
  independent_sources: number
  claims: readonly {
    confidence?: number | null | undefined
    sources: readonly { uri: string; observed_at?: string | null | undefined }[]
  }[]
}

/**
 * How a rule ranks one position: a key (null = the position has nothing this rule can read, and ranks
 * last) and an order on keys (positive when the first is better).
 */
interface Ranking<Key> {
  key(position: RankablePosition): Key | null
  compare(x: Key, y: Key): number
}

function maxOf<T>(values: Iterable<T>, compare: (x: T, y: T) => number): T | null {
  let best: T | null = null
  for (const value of values) if (best === null || compare(value, best) > 0) best = value
  return best
}

function* sourcesOf(position: RankablePosition) {
  for (const claim of position.claims) yield* claim.sources
}

const corroboration: Ranking<number> = {
  key: (position) => position.independent_sources,
  compare: (x, y) => x - y,
}

/** `source_priority` ranks by the earliest listed prefix any of the position's sources matches. */
function sourcePriority(prefixes: readonly string[]): Ranking<number> {
  return {
    key(position) {
      const indices: number[] = []
      for (const source of sourcesOf(position)) {
        // Plain prefixes of the normalised URI; a content digest plays no part here, because
        // the policy speaks of where a source lives, not of which bytes were read.
        const uri = normalizeSourceUri(source.uri)
        const index = prefixes.findIndex((prefix) => uri.startsWith(prefix))
        if (index !== -1) indices.push(index)
      }
      return maxOf(indices, (x, y) => y - x)
    },
    compare: (x, y) => y - x,
  }
}

const mostRecentSource: Ranking<Instant> = {
  key(position) {
    const instants: Instant[] = []
    for (const source of sourcesOf(position)) {
      if (source.observed_at != null) instants.push(parseInstant(source.observed_at, 'observed_at'))
    }
    return maxOf(instants, compareInstants)
  },
  compare: compareInstants,
}

const highestConfidence: Ranking<number> = {
  key(position) {
    const confidences: number[] = []
    for (const claim of position.claims) if (claim.confidence != null) confidences.push(claim.confidence)
    return maxOf(confidences, (x, y) => x - y)
  },
  compare: (x, y) => x - y,
}

function rankingFor(rule: PolicyRule, prefixes: readonly string[]): Ranking<unknown> {
  switch (rule) {
    case 'corroboration':
      return corroboration as Ranking<unknown>
    case 'source_priority':
      return sourcePriority(prefixes) as Ranking<unknown>
    case 'most_recent_source':
      return mostRecentSource as Ranking<unknown>
    case 'highest_confidence':
      return highestConfidence as Ranking<unknown>
  }
}

/** The positions sharing the best key; all of them when none has a key (they tie for last). */
function bestRanked<P extends RankablePosition>(positions: readonly P[], ranking: Ranking<unknown>): P[] {
  let best: P[] = []
  let bestKey: unknown = null
  for (const position of positions) {
    const key = ranking.key(position)
    if (key === null) continue
    const order = bestKey === null ? 1 : ranking.compare(key, bestKey)
    if (order > 0) {
      best = [position]
      bestKey = key
    } else if (order === 0) {
      best.push(position)
    }
  }
  return best.length === 0 ? [...positions] : best
}

export interface RuleChoice<P> {
  winner: P
  rule: PolicyRule
}

/**
 * The position the rules choose, and the rule that made the choice; null when every rule passed
 * (or the policy names none). Never depends on the order of `positions`.
 */
export function choosePosition<P extends RankablePosition>(
  positions: readonly P[],
  rules: readonly PolicyRule[],
  sourcePriorityPrefixes: readonly string[],
): RuleChoice<P> | null {
  let tied: readonly P[] = positions
  for (const rule of rules) {
    tied = bestRanked(tied, rankingFor(rule, sourcePriorityPrefixes))
    if (tied.length === 1) return { winner: tied[0]!, rule }
  }
  return null
}
