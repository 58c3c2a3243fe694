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
import { AuditBatch, type AuditEntry } from './audit-log.ts'
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
  audit_seq: number
  resolution: { by: string; rationale: string } | null
}

export interface ManifestEnvelope {
  manifest: Manifest
  manifest_digest: string
  jws: string
}

export type ManifestContent = Omit<Manifest, 'manifest_id' | 'issued_at' | 'audit_seq'>

export function envelopeFromRow(
  row: Pick<ManifestRow, 'manifest_jcs' | 'manifest_digest' | 'jws'>,
): ManifestEnvelope {
  return {
    manifest: JSON.parse(row.manifest_jcs) as Manifest,
    manifest_digest: row.manifest_digest,
    jws: row.jws,
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
 * Signs and stores a manifest with its audit records, inside the caller's transaction. The chain head is locked
 * first because the manifest names its own `audit_seq` before it is signed. Callers write everything else
 * before calling this, so the global lock is held only for signing, two inserts and the commit.
 */
export async function issueManifest(
  tx: Queryable,
  ctx: ServiceContext,
  options: IssueOptions,
): Promise<ManifestEnvelope> {
  const batch = await AuditBatch.open(tx)
  for (const entry of options.before ?? []) batch.append(entry)
  const issuedAt = new Date().toISOString()
  const manifest: Manifest = {
    ...options.content,
    manifest_id: options.manifestId ?? randomUUID(),
    issued_at: issuedAt,
    audit_seq: batch.nextSeq,
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
    audit_seq: manifest.audit_seq,
    manifest_jcs: jcs,
    manifest_digest: digest,
    jws,
  })
  batch.append({
    kind: 'manifest.issued',
    actor: options.actor,
    at: issuedAt,
    outcome_id: manifest.outcome_id,
    manifest_id: manifest.manifest_id,
    subagent_id: manifest.subagent_id,
    verdict: manifest.verdict,
    data: { manifest_digest: digest, directive: manifest.directive },
  })
  for (const entry of options.after ?? []) batch.append(entry)
  await batch.write()
  return { manifest, manifest_digest: digest, jws }
}

/** The envelope as JSON text straight from the stored canonical manifest (no parse and re-serialize). */
export function envelopeText(row: Pick<ManifestRow, 'manifest_jcs' | 'manifest_digest' | 'jws'>): string {
  return `{"manifest":${row.manifest_jcs},"manifest_digest":${JSON.stringify(row.manifest_digest)},"jws":${JSON.stringify(row.jws)}}`
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
