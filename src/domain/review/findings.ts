/**
 * The findings union of a council: what diverse models caught, merged into one list. Two judges rarely spell
 * a finding the same way ("SQL injection in /login" vs "sql  injection in /LOGIN"), so a finding is
 * identified by its normalised title and location; the merged entry keeps the highest severity reported and
 * says how many of the council's models saw it (its cross-model confidence).
 */

import { identityKey } from '../shared/agent-identity.ts'
import { hashJson, type Sha256 } from '../shared/canonical-json.ts'
import { type FindingSeverity, severityRank } from './vocabulary.ts'

/** One finding as a council judge reported it. `lens` and `detail` are free text and do not merge. */
export interface Finding {
  severity: FindingSeverity
  title: string
  location?: string | null
  lens?: string | null
  detail?: string | null
}

/** One council judge's findings. */
export interface FindingReport {
  judge_id: string
  findings: readonly Finding[]
}

/** A judge of the council, as submitted. */
export interface CouncilJudge {
  judge_id: string
  model: string
}

export interface MergedFinding {
  /** `sha256(JCS({title, location}))` of the normalised title and location. */
  fingerprint: Sha256
  /** The highest severity any judge reported for it. */
  severity: FindingSeverity
  /** Normalised. */
  title: string
  /** Normalised; null when no location was given or it was blank. */
  location: string | null
  /** Judge ids that reported it, sorted, each once. */
  reported_by: string[]
  /**
   * The models of those judges, one per identity (compared as in agent-identity.ts), each as submitted by the first
   * of them in the panel's order; sorted.
   */
  models: string[]
  /** Distinct reporting models ÷ distinct council models: 1 when every model of the council saw it. */
  confidence: number
}

/** Trimmed, lower-cased, every run of white space replaced by one space. */
export function normalizeFindingText(text: string): string {
  return text.trim().toLowerCase().replace(/\s+/g, ' ')
}

/** A location normalised like a title; absent, null or blank → null. */
export function normalizeLocation(location: string | null | undefined): string | null {
  if (location === undefined || location === null) return null
  const normalized = normalizeFindingText(location)
  return normalized === '' ? null : normalized
}

/** The identity of a finding: equal fingerprints merge. */
export function findingFingerprint(finding: Pick<Finding, 'title' | 'location'>): Sha256 {
  return hashJson({
    title: normalizeFindingText(finding.title),
    location: normalizeLocation(finding.location),
  })
}

interface Accumulator {
  fingerprint: Sha256
  severity: FindingSeverity
  title: string
  location: string | null
  judges: Set<string>
  /** By model identity: the reporting judge of that identity first in the panel, and its model as submitted. */
  models: Map<string, { place: number; model: string }>
}

/**
 * The findings union. `council` is every council judge in the panel's submitted order: its distinct model
 * identities are the denominator of `confidence`, and its order picks the spelling a finding's `models` show. A
 * judge reporting one fingerprint twice counts once. Sorted by severity (highest first), then confidence (highest
 * first), then fingerprint. The result does not depend on the order of `reports` or of the findings within one.
 */
export function mergeFindings(
  reports: readonly FindingReport[],
  council: readonly CouncilJudge[],
): MergedFinding[] {
  const identities = new Set(council.map((judge) => identityKey(judge.model)))
  if (identities.size === 0) throw new RangeError('mergeFindings needs at least one council judge')
  const places = new Map<string, number>()
  for (const [place, judge] of council.entries()) {
    if (!places.has(judge.judge_id)) places.set(judge.judge_id, place)
  }
  const merged = new Map<Sha256, Accumulator>()
  for (const report of reports) {
    const place = places.get(report.judge_id)
    // A judge outside the council would push confidence above 1; that is a caller's bug, not data.
    if (place === undefined) {
      throw new RangeError(`judge ${JSON.stringify(report.judge_id)} is not on the council`)
    }
    const model = council[place]!.model
    const identity = identityKey(model)
    for (const finding of report.findings) {
      const fingerprint = findingFingerprint(finding)
      let entry = merged.get(fingerprint)
      if (entry === undefined) {
        entry = {
          fingerprint,
          severity: finding.severity,
          title: normalizeFindingText(finding.title),
          location: normalizeLocation(finding.location),
          judges: new Set(),
          models: new Map(),
        }
        merged.set(fingerprint, entry)
      } else if (severityRank(finding.severity) > severityRank(entry.severity)) {
        entry.severity = finding.severity
      }
      entry.judges.add(report.judge_id)
      const spelled = entry.models.get(identity)
      if (spelled === undefined || place < spelled.place) entry.models.set(identity, { place, model })
    }
  }
  return [...merged.values()]
    .map(
      (entry): MergedFinding => ({
        fingerprint: entry.fingerprint,
        severity: entry.severity,
        title: entry.title,
        location: entry.location,
        reported_by: [...entry.judges].sort(),
        models: [...entry.models.values()].map((spelled) => spelled.model).sort(),
        confidence: entry.models.size / identities.size,
      }),
    )
    .sort(compareFindings)
}

/** Severity (highest first), then confidence (highest first), then fingerprint. */
export function compareFindings(x: MergedFinding, y: MergedFinding): number {
  return (
    severityRank(y.severity) - severityRank(x.severity) ||
    y.confidence - x.confidence ||
    (x.fingerprint < y.fingerprint ? -1 : x.fingerprint > y.fingerprint ? 1 : 0)
  )
}
