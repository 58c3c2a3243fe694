import { randomUUID } from 'node:crypto'
import { withTransaction } from '../db/pool.ts'
import { escalationResolve } from '../db/repositories/escalations.ts'
import { manifestById } from '../db/repositories/manifests.ts'
import { queryFirst, runStatement } from '../db/statement.ts'
import { HUMAN_RESOLVED } from '../domain/vocabulary.ts'
import { AppError } from '../errors.ts'
import type { ServiceContext } from '../services/context.ts'
import { caseAuditEntry } from './case-audit.ts'
import type { CaseKind, ManifestContent } from './case-kind.ts'
import { issueSignedManifest, parseManifest, type StoredEnvelope } from './manifests.ts'

/**
 * A human settles a HALTed case of any kind that escalates: a final HUMAN_RESOLVED manifest that supersedes the
 * HALT, the escalation marked resolved, the case moved to its resolved state. The case's row lock makes racing
 * resolutions queue; the second finds the case resolved and gets 409.
 */
export async function resolveCase<Case, Input, Content extends ManifestContent, Pending, Resolution, Request>(
  ctx: ServiceContext,
  kind: CaseKind<Case, Input, Content, Pending, Resolution, Request>,
  caseId: string,
  answer: Resolution,
  by: string,
): Promise<StoredEnvelope> {
  const handler = kind.resolution
  if (!handler) throw new Error(`${kind.name} cases are not resolved by a human`)
  const issued = await withTransaction(ctx.db, async (tx) => {
    const c = await kind.lock(tx, caseId)
    if (c === undefined) throw new AppError('NOT_FOUND', `no ${kind.noun} ${caseId}`)
    await handler.checkAnswer?.(tx, c, answer)
    const haltId = handler.haltManifestId(c)
    const haltRow = await queryFirst(tx, manifestById(haltId))
    if (!haltRow) throw new Error(`${kind.noun} ${caseId} names a missing manifest ${haltId}`)
    const { content, data } = handler.resolve(c, parseManifest(haltRow), answer, by)
    if (content.verdict !== HUMAN_RESOLVED) throw new Error(`a resolution's verdict is ${HUMAN_RESOLVED}`)
    const ref = { kind: kind.name, id: kind.caseId(c) }
    const manifestId = randomUUID()
    // Rows naming the new manifest first; issuing appends to the audit log, which holds its lock until commit.
    await runStatement(tx, escalationResolve(ref, manifestId, new Date()))
    await handler.recordResolution(tx, c, manifestId)
    const subject = kind.auditSubject(c)
    return issueSignedManifest(tx, ctx, {
      case: ref,
      round: kind.round(c),
      manifestKind: kind.manifestKind,
      manifestId,
      content,
      supersedes: haltId,
      final: true,
      // One resolution per HALT: the HALT names the inputs.
      inputsDigest: haltId,
      actor: by,
      subject,
      before: [
        caseAuditEntry(subject, {
          kind: 'resolution.recorded',
          actor: by,
          manifest_id: haltId,
          verdict: HUMAN_RESOLVED,
          data,
        }),
      ],
    })
  })
  ctx.metrics.manifestsIssued.inc({ verdict: issued.verdict, directive: issued.directive })
  return issued
}
