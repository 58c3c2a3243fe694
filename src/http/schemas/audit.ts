import { z } from 'zod'
import type { AuditRecord } from '../../audit-log/core/records.ts'
import { auditRecordExample } from '../../cases/outcome/examples.ts'
import { AUDIT_KINDS } from '../../domain/vocabulary.ts'
import { freeJson } from './common.ts'

export const auditRecordSchema = z
  .object({
    seq: z.number().int(),
    at: z.string(),
    kind: z.enum(AUDIT_KINDS),
    actor: z.string(),
    outcome_id: z.string().nullable(),
    manifest_id: z.string().nullable(),
    subagent_id: z.string().nullable(),
    orchestrator_id: z.string().nullable(),
    verdict: z.string().nullable(),
    data: z.record(z.string(), freeJson),
    prev_hash: z.string(),
    hash: z.string(),
  })
  .meta({ id: 'AuditRecord', examples: [auditRecordExample] }) satisfies z.ZodType<AuditRecord>
