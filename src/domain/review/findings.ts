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
  model: string
  findings: readonly Finding[]
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
  /** Normalised models of those judges, distinct, sorted. */
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
  models: Set<string>
}

/**
 * The findings union. `councilModels` are the models of every council judge (the denominator of
 * `confidence`); a judge reporting one fingerprint twice counts once. Sorted by severity (highest first),
 * then confidence (highest first), then fingerprint. The result does not depend on the order of `reports`
 * or of the findings within one.
 */
export function mergeFindings(
  reports: readonly FindingReport[],
  councilModels: readonly string[],
): MergedFinding[] {
  const council = new Set(councilModels.map(identityKey))
  if (council.size === 0) throw new RangeError('mergeFindings needs the models of at least one council judge')
  const merged = new Map<Sha256, Accumulator>()
  for (const report of reports) {
    const model = identityKey(report.model)
    // A model outside the council would push confidence above 1; that is a caller's bug, not data.
    if (!council.has(model)) {
      throw new RangeError(`judge ${JSON.stringify(report.judge_id)} runs on a model outside the council`)
    }
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
          models: new Set(),
        }
        merged.set(fingerprint, entry)
      } else if (severityRank(finding.severity) > severityRank(entry.severity)) {
        entry.severity = finding.severity
      }
      entry.judges.add(report.judge_id)
      entry.models.add(model)
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
        models: [...entry.models].sort(),
        confidence: entry.models.size / council.size,
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
