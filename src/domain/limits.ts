/**
 * The bounds on everything Arbiter accepts, in one table: each is checked where its input arrives, so nothing
 * accepted can later make a decision, a manifest or a read grow without bound (docs/limits.md). A request over a
 * limit is refused with the limit's name and value (`limit`, `max` in the problem body) and nothing is stored.
 *
 * Sizes in bytes are of canonical JSON (RFC 8785), the form Arbiter hashes and signs.
 */
import { canonicalJson } from './shared/canonical-json.ts'

export const LIMITS = {
  /** Orchestrators of one outcome: its expected orchestrators and those that interpreted it, together. */
  orchestrators_per_outcome: 16,
  /** One `success_criterion` document. */
  success_criterion_bytes: 8 * 1024,
  /** Evidence items of one outcome, counted in every version that lists them (the versions together). */
  evidence_items_per_outcome: 1000,
  /** Revisions one orchestrator may submit for one outcome. */
  revisions_per_orchestrator: 100,
  /** Revisions of one subtask's result. */
  results_per_subtask: 100,
  claims_per_result: 500,
  sources_per_claim: 20,
  qualifiers_per_claim: 8,
  /** Characters of a qualifier's name. */
  qualifier_key_length: 64,
  /** Characters of a qualifier's string value. */
  qualifier_value_length: 128,
  /** Claims of the latest results of one fan-out, together. */
  claims_per_fanout: 5000,
  /** The latest results of one fan-out, together. */
  fanout_results_bytes: 1024 * 1024,
  /** Findings in one review verdict. */
  findings_per_verdict: 200,
  /** One review verdict. */
  verdict_bytes: 128 * 1024,
  /** One signed manifest: an input that would make its case's next manifest larger is refused. */
  manifest_bytes: 4 * 1024 * 1024,
} as const

export type LimitName = keyof typeof LIMITS

/**
 * Limits of the decision itself rather than of an input: a fact with more distinct positions than this is not
 * compared pairwise (it is contested as `too_many_positions`), and one manifest lists at most this many pairs.
 */
export const MAX_COMPARED_POSITIONS = 16
export const MAX_LISTED_CONFLICTS = 500

/** An input over a limit: which limit, its value, and where in the body (a JSON Pointer under `body`), if anywhere. */
export interface LimitBreach {
  limit: LimitName
  max: number
  /** What the input came to (a count or a size in bytes), when it is known exactly. */
  actual?: number
  path?: string
}

export function breach(limit: LimitName, actual?: number, path?: string): LimitBreach {
  return {
    limit,
    max: LIMITS[limit],
    ...(actual === undefined ? {} : { actual }),
    ...(path === undefined ? {} : { path }),
  }
}

/** UTF-8 length of a string: how many bytes a canonical JSON text takes. */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8')
}

/** How many bytes `value` takes in canonical JSON (JCS): the measure of every size bound. */
export function jcsLength(value: unknown): number {
  return utf8Length(canonicalJson(value))
}
