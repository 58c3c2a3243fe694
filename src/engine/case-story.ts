import { caseAuditRecords } from '../audit-log/reads.ts'
import { manifestById } from '../db/repositories/manifests.ts'
import { queryFirst } from '../db/statement.ts'
import { AppError } from '../errors.ts'
import type { ServiceContext } from '../services/context.ts'
import type { CaseKind, ManifestContent } from './case-kind.ts'

/** One case's reconciled story: every audit record about it, and the envelope of its current manifest. */
export async function caseStory<Case, Input, Content extends ManifestContent, Pending, Resolution, Request>(
  ctx: Pick<ServiceContext, 'db' | 'auditLog'>,
  kind: CaseKind<Case, Input, Content, Pending, Resolution, Request>,
  caseId: string,
) {
  const c = await kind.find(ctx.db, caseId)
  if (c === undefined) throw new AppError('NOT_FOUND', `no ${kind.noun} ${caseId}`)
  // Read your writes: every change committed before this request is in the log before it is read.
  const records = await caseAuditRecords(ctx, kind.auditQuery(caseId))
  const manifestId = kind.manifestId(c)
  const manifest = manifestId === null ? null : ((await queryFirst(ctx.db, manifestById(manifestId))) ?? null)
  return { id: kind.caseId(c), status: kind.status(c), records, manifest }
}
