import { z } from 'zod'
import { OUTCOME_READINGS } from '../../domain/outcome/vocabulary.ts'
import type { GroundTruthRecord } from '../../probes/probe-runner.ts'
import { dryRunAnswerExample } from '../examples.ts'

/** One probe execution: what a manifest's `ground_truth_arbiter_predicate` and a dry run hold. */
export const groundTruthSchema = z
  .object({
    probe_id: z.string(),
    probe_version: z.number().int(),
    probe_digest: z.string(),
    request: z.object({ method: z.string(), url: z.string() }),
    executed_at: z.string(),
    attempts: z.number().int(),
    http_status: z.number().int().nullable(),
    response_digest: z.string().nullable(),
    result: z.enum(OUTCOME_READINGS).nullable(),
    error: z.object({ code: z.string(), detail: z.string() }).nullable(),
  })
  .meta({ id: 'GroundTruthArbiterPredicate', examples: [dryRunAnswerExample] }) satisfies z.ZodType<
  Omit<GroundTruthRecord, 'error'>
>
