/**
 * The words shared by every case kind, each defined once; a case kind's own words live in its folder
 * (`outcome/vocabulary.ts`). Adding a case kind adds its names to the tuples below; see docs/architecture.md.
 */
import { FANOUT_AUDIT_KINDS, FANOUT_DIRECTIVES, FANOUT_VERDICTS } from './fanout/vocabulary.ts'
import { OUTCOME_AUDIT_KINDS, OUTCOME_DIRECTIVES, OUTCOME_VERDICTS } from './outcome/vocabulary.ts'
import { REVIEW_AUDIT_KINDS, REVIEW_DIRECTIVES, REVIEW_VERDICTS } from './review/vocabulary.ts'
import { WEBHOOK_AUDIT_KINDS } from './webhooks/vocabulary.ts'

/** Kinds of disagreement Arbiter settles. Each is a case: stored inputs, a lock, a decision, a manifest. */
export const CASE_KINDS = ['outcome', 'fanout', 'review'] as const
export type CaseKindName = (typeof CASE_KINDS)[number]

/** One case: its kind's name and its id (the `case_kind`, `case_id` of manifests, escalations, probe runs). */
export interface CaseRef {
  kind: string
  id: string
}

/** The `kind` every signed manifest carries (one per case kind). */
export const MANIFEST_KINDS = ['outcome', 'reconciliation', 'review'] as const
export type ManifestKind = (typeof MANIFEST_KINDS)[number]

/** Every verdict and directive a manifest of any kind can carry (list filters accept each). */
export const MANIFEST_VERDICTS = unique([...OUTCOME_VERDICTS, ...FANOUT_VERDICTS, ...REVIEW_VERDICTS])
export type ManifestVerdict = (typeof MANIFEST_VERDICTS)[number]
export const MANIFEST_DIRECTIVES = unique([...OUTCOME_DIRECTIVES, ...FANOUT_DIRECTIVES, ...REVIEW_DIRECTIVES])

/** Case kinds whose HALT opens an escalation for a human (reviews hand back instead). */
export const ESCALATION_CASES = ['outcome', 'fanout'] as const
export type EscalationCase = (typeof ESCALATION_CASES)[number]

export const ESCALATION_STATUSES = ['open', 'resolved'] as const
export type EscalationStatus = (typeof ESCALATION_STATUSES)[number]

/** API key roles, from the narrowest reader to everything. */
export const ROLES = ['orchestrator', 'dashboard', 'ops', 'admin'] as const
export type Role = (typeof ROLES)[number]

/** Verdict and directive of a human resolution, for every case kind that escalates. */
export const HUMAN_RESOLVED = 'HUMAN_RESOLVED'

/** Audit records the engine writes for a case of any kind. */
export const ENGINE_AUDIT_KINDS = [
  'probe.executed',
  'manifest.issued',
  'escalation.opened',
  'resolution.recorded',
] as const

/** Audit records of administration: probes, API keys, signing keys and sub-agent policies. */
export const ADMIN_AUDIT_KINDS = [
  'probe.registered',
  'probe.updated',
  'key.created',
  'key.revoked',
  'policy.set',
  'policy.removed',
  'signing_key.added',
] as const

export const AUDIT_KINDS = [
  ...OUTCOME_AUDIT_KINDS,
  ...FANOUT_AUDIT_KINDS,
  ...REVIEW_AUDIT_KINDS,
  ...ENGINE_AUDIT_KINDS,
  ...ADMIN_AUDIT_KINDS,
  ...WEBHOOK_AUDIT_KINDS,
] as const
export type AuditKind = (typeof AUDIT_KINDS)[number]

/** The words of several kinds in one list, each once (kinds share some: `HUMAN_RESOLVED`, `PROCEED`, …). */
function unique<const T extends string>(words: readonly T[]): [T, ...T[]] {
  return [...new Set(words)] as [T, ...T[]]
}
