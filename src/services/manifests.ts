import { randomUUID } from 'node:crypto'
import { signCanonical } from '../crypto/jws.ts'
import type { Queryable } from '../db/pool.ts'
import {
  findManifest,
  insertManifest,
  listManifests,
  type ManifestFilter,
  type ManifestRow,
} from '../db/repositories/manifests.ts'
import { canonicalJson, sha256 } from '../domain/canonical-json.ts'
import type { Directive, DivergenceReceipt, OutcomeReading, Verdict } from '../domain/decision.ts'
import type { GroundTruthRecord } from '../probes/probe-runner.ts'
import { type AuditEntry, appendAuditRecords } from './audit-log.ts'
import type { Actor, ServiceContext } from './context.ts'
import type { InterpretationView } from './interpretation-view.ts'

/** The signed manifest, field for field as SPEC §3 "Manifests" names them. */
export interface Manifest {
  manifest_id: string
  outcome_id: string
  subagent_id: string
  run_id: string
  issued_at: string
  verdict: Verdict
  directive: Directive
  resolved_outcome: OutcomeReading | null
  subagent_outcome_evidence_hash: string
  interpretations: InterpretationView[]
  interpretation_divergence_receipt: DivergenceReceipt | null
  ground_truth_arbiter_predicate: GroundTruthRecord | null
  action_owner: string | null
  missing_orchestrators: string[]
  supersedes: string | null
  /**
   * Only in manifests signed before audit records were sequenced off the request path: they named their own
   * seq inside the signed bytes, and are served exactly as signed. Newer envelopes carry it outside.
   */
  audit_seq?: number
  resolution: { by: string; rationale: string } | null
}

export interface ManifestEnvelope {
  manifest: Manifest
  manifest_digest: string
  jws: string
  /** The seq of its manifest.issued record: null until the sequencer has placed it. */
  audit_seq: number | null
}

export type ManifestContent = Omit<Manifest, 'manifest_id' | 'issued_at' | 'audit_seq'>

export function envelopeFromRow(
  row: Pick<ManifestRow, 'manifest_jcs' | 'manifest_digest' | 'jws' | 'audit_seq'>,
): ManifestEnvelope {
  return {
    manifest: JSON.parse(row.manifest_jcs) as Manifest,
    manifest_digest: row.manifest_digest,
    jws: row.jws,
    audit_seq: row.audit_seq,
  }
}

export async function loadEnvelope(db: Queryable, manifestId: string): Promise<ManifestEnvelope | undefined> {
  const row = await findManifest(db, manifestId)
  return row ? envelopeFromRow(row) : undefined
}

export interface IssueOptions {
  /** Chosen by the caller when other rows name the manifest and are written before it. */
  manifestId?: string
  content: ManifestContent
  final: boolean
  inputsDigest: string
  actor: Actor
  /** Audit entries that belong before `manifest.issued` (e.g. `resolution.recorded`). */
  before?: AuditEntry[]
  /** Audit entries after it (e.g. `escalation.opened`). */
  after?: AuditEntry[]
}

/**
 * Signs and stores a manifest with its audit records, inside the caller's transaction. The manifest.issued
 * record gets its seq from the sequencer after the commit, which fills in the row's `audit_seq` (null until then).
 */
export async function issueManifest(
  tx: Queryable,
  ctx: ServiceContext,
  options: IssueOptions,
): Promise<ManifestEnvelope> {
  const issuedAt = new Date().toISOString()
  const manifest: Manifest = {
    ...options.content,
    manifest_id: options.manifestId ?? randomUUID(),
    issued_at: issuedAt,
  }
  const jcs = canonicalJson(manifest)
  const digest = sha256(jcs)
  const jws = await signCanonical(manifest, ctx.signingKey)
  await insertManifest(tx, {
    id: manifest.manifest_id,
    outcome_id: manifest.outcome_id,
    subagent_id: manifest.subagent_id,
    verdict: manifest.verdict,
    directive: manifest.directive,
    final: options.final,
    inputs_digest: options.inputsDigest,
    issued_at: new Date(issuedAt),
    audit_seq: null,
    manifest_jcs: jcs,
    manifest_digest: digest,
    jws,
  })
  await appendAuditRecords(tx, [
    ...(options.before ?? []),
    {
      kind: 'manifest.issued',
      actor: options.actor,
      at: issuedAt,
      outcome_id: manifest.outcome_id,
      manifest_id: manifest.manifest_id,
      subagent_id: manifest.subagent_id,
      verdict: manifest.verdict,
      data: { manifest_digest: digest, directive: manifest.directive },
    },
    ...(options.after ?? []),
  ])
  return { manifest, manifest_digest: digest, jws, audit_seq: null }
}

/** The envelope as JSON text straight from the stored canonical manifest (no parse and re-serialize). */
export function envelopeText(
  row: Pick<ManifestRow, 'manifest_jcs' | 'manifest_digest' | 'jws' | 'audit_seq'>,
): string {
  return `{"manifest":${row.manifest_jcs},"manifest_digest":${JSON.stringify(row.manifest_digest)},"jws":${JSON.stringify(row.jws)},"audit_seq":${row.audit_seq ?? 'null'}}`
}

/** GET /v1/manifests: stored rows oldest first (callers ask for limit + 1 to learn whether a page follows). */
export async function listManifestRows(
  db: Queryable,
  filter: ManifestFilter,
  limit: number,
): Promise<ManifestRow[]> {
  return listManifests(db, filter, limit)
}

/** GET /v1/manifests/{id}: the stored row, whose canonical text is served as is. */
export async function findManifestRow(db: Queryable, manifestId: string): Promise<ManifestRow | undefined> {
  return findManifest(db, manifestId)
}
