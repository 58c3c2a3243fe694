/**
 * The limits one fan-out result is held to on its own (claims per result; sources, qualifiers, qualifier names and
 * values per claim), and the totals the case keeps of its latest results (claims, canonical bytes, the manifest
 * bound of manifest-bound.ts). Pure: the service checks the first against the body, and the totals against the
 * limits with the case's sums.
 */
import { breach, LIMITS, type LimitBreach, utf8Length } from '../limits.ts'
import { canonicalJson } from '../shared/canonical-json.ts'
import type { Qualifiers } from './claims.ts'
import { type BoundClaim, resultManifestWeight } from './manifest-bound.ts'

/** Characters as a reader counts them: code points, not UTF-16 units. */
function characters(text: string): number {
  let count = 0
  for (const _ of text) count++
  return count
}

function qualifierBreach(qualifiers: Qualifiers, at: string): LimitBreach | undefined {
  const entries = Object.entries(qualifiers)
  if (entries.length > LIMITS.qualifiers_per_claim)
    return breach('qualifiers_per_claim', entries.length, `${at}/qualifiers`)
  for (const [key, value] of entries) {
    const keyLength = characters(key)
    if (keyLength > LIMITS.qualifier_key_length)
      return breach('qualifier_key_length', keyLength, `${at}/qualifiers`)
    if (typeof value === 'string') {
      const valueLength = characters(value)
      if (valueLength > LIMITS.qualifier_value_length)
        return breach('qualifier_value_length', valueLength, `${at}/qualifiers`)
    }
  }
  return undefined
}

/** The first limit one result's claims pass, with the path of the offending part (`body/claims/3/sources`). */
export function resultLimitBreach(
  claims: readonly (BoundClaim & { qualifiers?: Qualifiers | undefined })[],
): LimitBreach | undefined {
  if (claims.length > LIMITS.claims_per_result)
    return breach('claims_per_result', claims.length, 'body/claims')
  for (let i = 0; i < claims.length; i++) {
    const claim = claims[i]!
    const at = `body/claims/${i}`
    if (claim.sources.length > LIMITS.sources_per_claim)
      return breach('sources_per_claim', claim.sources.length, `${at}/sources`)
    const qualifiers = claim.qualifiers === undefined ? undefined : qualifierBreach(claim.qualifiers, at)
    if (qualifiers) return qualifiers
  }
  return undefined
}

/** What one result adds to its fan-out's totals. */
export interface ResultTotals {
  claims: number
  /** Canonical JSON bytes of the result as submitted. */
  bytes: number
  /** Its part of the bound on the fan-out's next manifest. */
  manifest_weight: number
}

export function resultTotals(
  body: Parameters<typeof resultManifestWeight>[0] & { [member: string]: unknown },
  canonicalText: string = canonicalJson(body),
): ResultTotals {
  return {
    claims: body.claims.length,
    bytes: utf8Length(canonicalText),
    manifest_weight: resultManifestWeight(body),
  }
}

/** The fan-out's totals over its latest results, and its manifest's base part (manifestBase). */
export interface FanoutTotals {
  claims: number
  bytes: number
  manifest_weight: number
  manifest_base: number
}

/** The first fan-out limit the totals would pass once `added` replaces `replaced` (a subtask's previous result). */
export function fanoutLimitBreach(
  totals: FanoutTotals,
  added: ResultTotals,
  replaced: ResultTotals | null,
): LimitBreach | undefined {
  const claims = totals.claims - (replaced?.claims ?? 0) + added.claims
  if (claims > LIMITS.claims_per_fanout) return breach('claims_per_fanout', claims)
  const bytes = totals.bytes - (replaced?.bytes ?? 0) + added.bytes
  if (bytes > LIMITS.fanout_results_bytes) return breach('fanout_results_bytes', bytes)
  const manifest =
    totals.manifest_base + totals.manifest_weight - (replaced?.manifest_weight ?? 0) + added.manifest_weight
  if (manifest > LIMITS.manifest_bytes) return breach('manifest_bytes')
  return undefined
}
