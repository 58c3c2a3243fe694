/**
 * The words shared by every case kind, each defined once. A case kind's own words live in its folder
 * (`outcome/vocabulary.ts`); the lists of every kind's words (case kinds, manifest kinds, verdicts, directives,
 * audit kinds) are made from the kinds the service registers (src/http/case-kinds.ts), so adding a kind adds
 * nothing here.
 */

/** One case: its kind's name and its id (the `case_kind`, `case_id` of manifests, escalations, probe runs). */
export interface CaseRef {
  kind: string
  id: string
}

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

/** An audit record's kind: a case kind's own, the engine's or administration's (the lists above). */
export type AuditKind = string
