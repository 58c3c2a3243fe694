import { z } from 'zod'
import type { AuditRecord } from '../../audit-log/core/records.ts'
import { freeJson } from './common.ts'

/** An audit record whose `kind` is one of `auditKinds` (every kind the app's case kinds, engine and admin write). */
export function auditRecordSchemaOf(auditKinds: [string, ...string[]], examples: unknown[]) {
  return z
    .object({
      seq: z.number().int(),
      at: z.string(),
      kind: z.enum(auditKinds),
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
    .meta({
      id: 'AuditRecord',
      ...(examples.length > 0 ? { examples } : {}),
    }) satisfies z.ZodType<AuditRecord>
}
