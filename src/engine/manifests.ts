import { type AuditEntry, auditAppend, auditAppended } from '../audit-log/append.ts'
import { signCanonicalText } from '../crypto/jws.ts'
import type { Queryable } from '../db/pool.ts'
import {
  envelopeById,
  type ManifestRow,
  manifestInsert,
  manifestsPage,
} from '../db/repositories/manifests.ts'
import {
  combineWrites,
  guardedWrites,
  queryFirst,
  queryStatement,
  runStatement,
  type Statement,
} from '../db/statement.ts'
import { breach, LIMITS, utf8Length } from '../domain/limits.ts'
import { canonicalJson, sha256 } from '../domain/shared/canonical-json.ts'
import type { CaseRef } from '../domain/vocabulary.ts'
import { found, limitExceeded } from '../errors.ts'
import { takeTurn } from '../event-loop-turns.ts'
import { type Page, type PageRequest, readSeqPage } from '../pagination.ts'
import type { ServiceContext } from '../services/context.ts'
import { inSpan } from '../tracing/spans.ts'
import { caseAuditEntry } from './case-audit.ts'
import type { AuditSubject, ManifestContent, StoredManifest } from './case-kind.ts'

/**
 * A signed manifest as stored and served: the canonical manifest text exactly as signed, its digest, its JWS,
 * and its place in the audit log. The text is served as stored, never re-serialized, so every manifest keeps
 * verifying byte for byte whatever fields its kind had when it was signed.
 */
export type StoredEnvelope = Pick<ManifestRow, 'manifest_jcs' | 'manifest_digest' | 'jws' | 'audit_seq'>

/** The envelope `{manifest, manifest_digest, jws, audit_seq}` as JSON text. */
export function envelopeText(envelope: StoredEnvelope): string {
  return envelopePieces(envelope).join('')
}

/**
 * The JSON text of an envelope in pieces, its stored manifest and JWS among them as they are (src/domain/shared/
 * utf8-pieces.ts writes them out without joining them). A compact JWS is three base64url segments joined by dots,
 * characters JSON never escapes, so it is quoted as it is rather than scanned and copied by JSON.stringify.
 */
export function envelopePieces(envelope: StoredEnvelope): string[] {
  return [
    '{"manifest":',
    envelope.manifest_jcs,
    `,"manifest_digest":${JSON.stringify(envelope.manifest_digest)},"jws":"`,
    envelope.jws,
    `","audit_seq":${envelope.audit_seq === null ? 'null' : envelope.audit_seq}}`,
  ]
}

export function parseManifest(envelope: Pick<StoredEnvelope, 'manifest_jcs'>): StoredManifest {
  return JSON.parse(envelope.manifest_jcs) as StoredManifest
}

export interface ManifestToIssue<Content extends ManifestContent> {
  case: CaseRef
  /** The case's round this manifest decides (0 for kinds decided once). */
  round: number
  /** The `kind` the manifest carries. */
  manifestKind: string
  /** Chosen by the caller, because rows written before the manifest (escalation, case row) name it. */
  manifestId: string
  content: Content
  /** The manifest this one supersedes: a non-final one of the same round, or the HALT a resolution settles. */
  supersedes: string | null
  final: boolean
  inputsDigest: string
  actor: string
  /** The case's ids for the `manifest.issued` record (and the manifest row's `subagent_id`). */
  subject: AuditSubject
  /** Audit entries that belong before `manifest.issued` (e.g. `resolution.recorded`). */
  before?: AuditEntry[]
  /** Audit entries after it (e.g. `escalation.opened`). */
  after?: AuditEntry[]
  /**
   * The case's own writes that go with the manifest (its new state, an escalation): sent with the manifest and
   * its audit records as one statement, so none may read what another writes.
   */
  alongside?: Statement[]
}

/**
 * The one way a manifest of any kind is issued: signs it, appends its audit records and stores it, inside the
 * caller's transaction, in one statement with the case's writes `alongside`. The manifest's `audit_seq` is the seq of its `manifest.issued` record; it lives in the
 * envelope, outside the signature, because the sequencer assigns it after the commit (null until then).
 */
export async function issueSignedManifest<Content extends ManifestContent>(
  tx: Queryable,
  ctx: Pick<ServiceContext, 'signingKey'>,
  issue: ManifestToIssue<Content>,
): Promise<ManifestRow> {
  const { row, writes } = await signedManifest(ctx, issue)
  await runStatement(tx, combineWrites(writes))
  auditAppended(tx)
  return row
}

/**
 * The same, in one statement with no transaction around it, written only if `guard` (an UPDATE … RETURNING of
 * the case row, e.g. conditional on the row being as the decision read it) changes a row: undefined otherwise,
 * and nothing is written.
 */
export async function issueSignedManifestIf<Content extends ManifestContent>(
  db: Queryable,
  ctx: Pick<ServiceContext, 'signingKey'>,
  issue: ManifestToIssue<Content>,
  guard: Statement,
): Promise<ManifestRow | undefined> {
  const { row, writes } = await signedManifest(ctx, issue)
  const rows = await queryStatement(db, guardedWrites(guard, writes))
  if (rows.length === 0) return undefined
  auditAppended(db)
  return row
}

/** The manifest signed, its row, and the writes that store it: the case's own, its audit records, the row. */
async function signedManifest<Content extends ManifestContent>(
  ctx: Pick<ServiceContext, 'signingKey'>,
  issue: ManifestToIssue<Content>,
): Promise<{ row: ManifestRow; writes: Statement[] }> {
  const issuedAt = new Date().toISOString()
  const manifest = {
    ...issue.content,
    kind: issue.manifestKind,
    manifest_id: issue.manifestId,
    issued_at: issuedAt,
    supersedes: issue.supersedes,
  }
  const jcs = canonicalJson(manifest)
  // Every input is held where it arrives to a bound on its case's next manifest, so a decision never comes here
  // too large; a resolution's own answer and rationale are judged here, on the manifest they make.
  const bytes = utf8Length(jcs)
  if (bytes > LIMITS.manifest_bytes) {
    throw limitExceeded(breach('manifest_bytes', bytes), 'the manifest this would sign is too large')
  }
  const digest = sha256(jcs)
  const jws = await inSpan(
    'arbiter.sign',
    { 'arbiter.signed': 'manifest', 'arbiter.manifest.id': issue.manifestId },
    () => signCanonicalText(jcs, ctx.signingKey),
  )
  const audit = auditAppend([
    ...(issue.before ?? []),
    caseAuditEntry(issue.subject, {
      kind: 'manifest.issued',
      actor: issue.actor,
      at: issuedAt,
      manifest_id: issue.manifestId,
      verdict: issue.content.verdict,
      data: { manifest_digest: digest, directive: issue.content.directive, kind: issue.manifestKind },
    }),
    ...(issue.after ?? []),
  ])
  const row: ManifestRow = {
    id: issue.manifestId,
    kind: issue.manifestKind,
    case_kind: issue.case.kind,
    case_id: issue.case.id,
    case_round: issue.round,
    subagent_id: issue.subject.subagent_id ?? null,
    verdict: issue.content.verdict,
    directive: issue.content.directive,
    final: issue.final,
    inputs_digest: issue.inputsDigest,
    issued_at: new Date(issuedAt),
    // The seq of its manifest.issued record: the sequencer assigns it after the commit.
    audit_seq: null,
    manifest_jcs: jcs,
    manifest_digest: digest,
    jws,
  }
  return { row, writes: [...(issue.alongside ?? []), audit, manifestInsert(row)] }
}

/** GET /v1/manifests/{id}. */
export async function getManifest(
  ctx: Pick<ServiceContext, 'db'>,
  manifestId: string,
): Promise<StoredEnvelope> {
  return found(await queryFirst(ctx.db, envelopeById(manifestId)), `no manifest ${manifestId}`)
}

export interface ManifestQuery {
  kind?: string | undefined
  /** Manifests of these cases; more than one case matches nothing (a manifest belongs to one case). */
  cases?: CaseRef[]
  subagentId?: string | undefined
  verdict?: string | undefined
  directive?: string | undefined
  since?: Date | undefined
}

/**
 * GET /v1/manifests: envelopes of every kind, in log order, read your writes (every manifest committed before
 * the call is sequenced and listed), in one statement while the log keeps up.
 */
export async function pageManifests(
  ctx: Pick<ServiceContext, 'auditLog'>,
  query: ManifestQuery,
  page: PageRequest,
): Promise<Page<StoredEnvelope>> {
  const { cases = [], ...rest } = query
  const listed = await readSeqPage(
    page,
    async (afterSeq, limit) =>
      cases.length > 1
        ? []
        : ctx.auditLog.readYourWrites<ManifestRow>(
            manifestsPage({ ...rest, case: cases[0], afterSeq }, limit),
            'audit_seq',
          ),
    (row) => row.audit_seq ?? 0,
    (row) => row,
  )
  // A page of megabytes is made into its answer next, on this thread: in a turn of its own
  // (src/event-loop-turns.ts), so that pages that arrive together for several readers are not built back to back.
  if (storedLength(listed.items) >= LARGE_PAGE_LENGTH) await takeTurn()
  return listed
}

/** Pages of stored envelopes this long (characters of their manifests and JWS) take a turn to be answered. */
const LARGE_PAGE_LENGTH = 256 * 1024

function storedLength(envelopes: readonly StoredEnvelope[]): number {
  let length = 0
  for (const envelope of envelopes) length += envelope.manifest_jcs.length + envelope.jws.length
  return length
}
