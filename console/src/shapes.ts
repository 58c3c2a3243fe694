/**
 * The API shapes the console reads, and readers that tolerate older servers: a manifest without `kind` is an
 * outcome manifest, `audit_seq` may sit inside the manifest instead of the envelope, an escalation without
 * `case` is an outcome's, and the checkpoint and verify report may lack the Merkle fields.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** The kinds the console knows by name; a server may issue others, which are shown by their own name. */
export const KNOWN_MANIFEST_KINDS = ['outcome', 'reconciliation', 'review'] as const

/** A known kind or any other a newer server issues. */
export type ManifestKind = (typeof KNOWN_MANIFEST_KINDS)[number] | (string & {})

export interface ManifestCommon {
  kind?: ManifestKind
  manifest_id: string
  issued_at: string
  verdict: string
  directive: string
  supersedes: string | null
  /** Older servers put it here; newer ones in the envelope. */
  audit_seq?: number | null
}

export interface IntendedAction {
  kind: string
  resources: string[]
}

export interface ManifestInterpretation {
  orchestrator_id: string
  success_criterion_signature: string
  outcome_interpretation: string
  evidence_hash: string
  intended_action: IntendedAction | null
  revision: number
  received_at: string
}

export interface CriteriaDifference {
  pointer: string
  a?: Json
  b?: Json
}

export interface DivergencePair {
  a: string
  b: string
  a_interpretation: string
  b_interpretation: string
  a_criterion_signature: string
  b_criterion_signature: string
  criteria_divergence: CriteriaDifference[] | null
  evidence_divergence: {
    a_evidence_hash: string
    b_evidence_hash: string
    only_in_a: string[]
    only_in_b: string[]
  } | null
}

export interface DivergenceReceipt {
  kind: string
  actions_disjoint: boolean
  pairs: DivergencePair[]
  receipt_digest: string
}

/** What a ground-truth probe did for a decision (the manifest's `ground_truth_arbiter_predicate`). */
export interface ProbeRun {
  probe_id: string
  probe_version?: number
  request?: { method: string; url: string }
  executed_at?: string
  attempts?: number
  http_status: number | null
  result: string | null
  error: { code: string; detail: string } | null
}

export interface OutcomeManifest extends ManifestCommon {
  outcome_id: string
  subagent_id: string
  run_id: string
  resolved_outcome: string | null
  interpretations: ManifestInterpretation[]
  interpretation_divergence_receipt: DivergenceReceipt | null
  ground_truth_arbiter_predicate: ProbeRun | null
  action_owner: string | null
  missing_orchestrators: string[]
  resolution: { by: string; rationale: string } | null
}

export interface Position {
  value: Json
  effective_date: string | null
  qualifiers: Record<string, Json>
}

export interface ClaimSource {
  uri: string
  excerpt?: string | null
  content_digest?: string | null
  observed_at?: string | null
}

export interface FactClaim {
  claim_ref: string
  subtask_id: string
  revision: number
  position_id: string
  confidence: number | null
  sources: ClaimSource[]
  out_of_scope: boolean
}

export interface FactPosition extends Position {
  position_id: string
  claims: string[]
  independent_sources: number
  lost_by: string | null
}

export interface FactConflict {
  a: string
  b: string
  differs: string[]
  qualifier_differences: CriteriaDifference[]
}

export interface ReconciledFact {
  fact: string
  status: string
  answer: Position | null
  variants: {
    qualifiers: Record<string, Json>
    status: string
    answer: Position | null
    rule: string | null
  }[]
  rule: string | null
  reason: string | null
  positions: FactPosition[]
  claims: FactClaim[]
  conflicts: FactConflict[]
  echoes: { source: string; claims: string[] }[]
}

export interface Coverage {
  subtasks: {
    subtask_id: string
    status: string
    revision: number | null
    received_at: string | null
    late: boolean
    result_digest: string | null
  }[]
  missing_subtasks: string[]
  late_subtasks: string[]
  needs_context: { subtask_id: string; blocking_question: string }[]
  blocked: { subtask_id: string; blocking_reason: string }[]
  concerns: { subtask_id: string; concerns: string[] }[]
  uncovered_facts: string[]
  overlaps: { fact: string; subtasks: string[] }[]
}

export interface ReconciliationManifest extends ManifestCommon {
  kind: 'reconciliation'
  fanout_id: string
  orchestrator_id: string
  fanout_key: string
  coverage: Coverage
  facts: ReconciledFact[]
  reasons: { code: string; subject: string }[]
  resolution: { by: string; rationale: string } | null
}

export interface JudgeVerdict {
  judge_id: string
  model: string
  stage: number | null
  role: string | null
  status: string
  summary: string | null
  concerns: string[]
  blocking_question: string | null
  blocking_reason: string | null
  verdict_digest: string
}

export interface Finding {
  fingerprint: string
  severity: string
  title: string
  location: string | null
  reported_by: string[]
  models: string[]
  confidence: number
}

export interface ReviewManifest extends ManifestCommon {
  kind: 'review'
  review_id: string
  orchestrator_id: string
  review_key: string
  mode: string
  revision: number
  subject: { digest: string; description?: string | null; uri?: string | null }
  implementer: { model: string; context_id: string }
  judges: { judge_id: string; model: string; context_id: string; stage: number | null; role: string | null }[]
  verdicts: JudgeVerdict[]
  concerns: { judge_id: string; concern: string }[]
  blocking_question: string | null
  blocking_reason: string | null
  divergence: { a: string; b: string; a_status: string; b_status: string } | null
  findings: Finding[]
}

export type Manifest = OutcomeManifest | ReconciliationManifest | ReviewManifest

export interface Envelope<M extends ManifestCommon = Manifest> {
  manifest: M
  manifest_digest: string
  jws: string
  audit_seq?: number | null
}

export interface Page<T> {
  items: T[]
  next_cursor: string | null
}

export interface EvidenceItem {
  kind: string
  name?: string
  content: Json
}

export interface Outcome {
  outcome_id: string
  subagent_id: string
  run_id: string
  status: string
  evidence_hash: string
  /** Each evidence version, oldest first, with the hashes of the items it holds (older servers: absent). */
  evidence_versions?: { evidence_hash: string; item_hashes: string[]; created_at: string }[]
  evidence: EvidenceItem[]
  interpretations: ManifestInterpretation[]
  expected_orchestrators: string[]
  arbiter_orchestrator_id: string | null
  fallback_policy: string
  manifest_id: string | null
  created_at: string
}

export interface Fanout {
  fanout_id: string
  orchestrator_id: string
  fanout_key: string
  question: string
  facts: string[]
  subtasks: { subtask_id: string; scope?: string; facts: string[] }[]
  deadline: string | null
  status: string
  manifest_id: string | null
  created_at: string
}

export interface Review {
  review_id: string
  orchestrator_id: string
  review_key: string
  mode: string
  revision: number
  status: string
  manifest_id: string | null
  created_at: string
}

/** The case an escalation belongs to: a known kind or any other a newer server escalates. */
export type CaseKind = 'outcome' | 'fanout' | (string & {})

export interface Escalation {
  case?: CaseKind
  outcome_id?: string | null
  fanout_id?: string | null
  subagent_id: string | null
  run_id: string | null
  status: 'open' | 'resolved'
  manifest_id: string
  verdict: string
  interpretation_divergence_receipt: DivergenceReceipt | null
  opened_at: string
  resolved_at: string | null
}

export interface AuditRecord {
  seq: number
  at: string
  kind: string
  actor: string
  outcome_id: string | null
  manifest_id: string | null
  subagent_id: string | null
  orchestrator_id: string | null
  verdict: string | null
  data: Record<string, Json>
  prev_hash: string
  hash: string
}

export interface Story {
  status: string
  records: AuditRecord[]
  manifest: Envelope | null
}

/** Both checkpoint generations: the chain head only, or the signed tree head with its note. */
export interface CheckpointAnswer {
  checkpoint: {
    origin?: string
    tree_size?: number
    root_hash?: string
    head_seq?: number | null
    head_hash?: string | null
    seq?: number
    hash?: string
    at: string
  }
  note?: string
  jws: string
}

export interface VerifyReport {
  ok: boolean
  checked: number
  head_seq: number | null
  head_hash: string | null
  tree_size?: number
  root_hash?: string | null
  checkpoints_checked?: number
  first_bad_seq: number | null
}

export interface InclusionProof {
  seq?: number
  manifest_id?: string
  record?: AuditRecord
  leaf_index: number
  tree_size: number
  leaf_hash: string
  proof: string[]
  checkpoint: CheckpointAnswer | null
}

export function manifestKind(manifest: ManifestCommon): ManifestKind {
  return manifest.kind ?? 'outcome'
}

export function auditSeqOf(envelope: Envelope): number | null {
  return envelope.audit_seq ?? envelope.manifest.audit_seq ?? null
}

export function escalationCase(escalation: Escalation): CaseKind {
  return escalation.case ?? 'outcome'
}

/** What the console keeps of a manifest in its feed: what a feed line and the chart show, not the decision. */
export type ManifestSummary = Omit<ManifestCommon, 'audit_seq'> &
  Partial<
    Pick<OutcomeManifest, 'outcome_id' | 'subagent_id' | 'run_id'> &
      Pick<ReconciliationManifest, 'fanout_id' | 'fanout_key'> &
      Pick<ReviewManifest, 'review_id' | 'review_key'>
  >

/**
 * A manifest's summary: a manifest may be megabytes (a fan-out's facts, a review's findings), and the feed keeps an
 * hour of them.
 */
export function summarizeManifest(manifest: Manifest): ManifestSummary {
  const m = manifest as ManifestCommon & ManifestSummary
  const summary: ManifestSummary = {
    manifest_id: m.manifest_id,
    issued_at: m.issued_at,
    verdict: m.verdict,
    directive: m.directive,
    supersedes: m.supersedes,
  }
  if (m.kind !== undefined) summary.kind = m.kind
  for (const field of [
    'outcome_id',
    'subagent_id',
    'run_id',
    'fanout_id',
    'fanout_key',
    'review_id',
    'review_key',
  ] as const) {
    if (typeof m[field] === 'string') summary[field] = m[field]
  }
  return summary
}

/** A case as a console location (none for a kind the console does not know) and a human label. */
export interface CaseTarget {
  href: string | null
  label: string
  kindLabel: string
}

/** The case a manifest belongs to; a kind the console does not know is shown by its own name, without a link. */
export function caseOf(manifest: ManifestSummary): CaseTarget {
  const kind = manifestKind(manifest)
  switch (kind) {
    case 'outcome':
      return {
        href: `#/outcomes/${manifest.outcome_id}`,
        label: `${manifest.subagent_id} / ${manifest.run_id}`,
        kindLabel: 'outcome',
      }
    case 'reconciliation':
      return {
        href: `#/fanouts/${manifest.fanout_id}`,
        label: manifest.fanout_key ?? '',
        kindLabel: 'fan-out',
      }
    case 'review':
      return {
        href: `#/reviews/${manifest.review_id}`,
        label: manifest.review_key ?? '',
        kindLabel: 'review',
      }
    default:
      return { href: null, label: manifest.manifest_id, kindLabel: kind }
  }
}

/** The case an escalation belongs to; a kind the console does not know is shown by its own name, without a link. */
export function escalationTarget(escalation: Escalation): Omit<CaseTarget, 'label'> {
  const kind = escalationCase(escalation)
  switch (kind) {
    case 'outcome':
      return { href: `#/outcomes/${escalation.outcome_id}`, kindLabel: 'outcome' }
    case 'fanout':
      return { href: `#/fanouts/${escalation.fanout_id}`, kindLabel: 'fan-out' }
    default:
      return { href: null, kindLabel: kind }
  }
}

/** Tree size and head of either checkpoint generation. */
export function checkpointFacts(answer: CheckpointAnswer) {
  const c = answer.checkpoint
  return {
    treeSize: c.tree_size ?? c.seq ?? null,
    headSeq: c.head_seq ?? c.seq ?? null,
    headHash: c.head_hash ?? c.hash ?? null,
    rootHash: c.root_hash ?? null,
    origin: c.origin ?? null,
    at: c.at,
  }
}
