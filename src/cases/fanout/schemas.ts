import { z } from 'zod'
import type {
  ClaimEntry,
  Conflict,
  Coverage,
  Echo,
  FactEntry,
  Position,
  PositionEntry,
  Reason,
  Variant,
} from '../../domain/fanout/reconcile.ts'
import {
  ANSWER_RULES,
  CONTESTED_REASONS,
  COVERAGE_STATUSES,
  DECOMPOSITION_MODES,
  FACT_STATUSES,
  FANOUT_DIRECTIVES,
  FANOUT_STATUSES,
  FANOUT_VERDICTS,
  type FanoutPolicy,
  INCOMPLETE_MODES,
  POLICY_RULES,
  QUALIFIER_DIFFERENCE_MODES,
  REASON_CODES,
} from '../../domain/fanout/vocabulary.ts'
import { ENVELOPE_STATUSES } from '../../domain/status-envelope.ts'
import { freeJson } from '../../http/schemas/common.ts'
import { envelopeOf } from '../../http/schemas/envelope.ts'
import { claimSourceSchema, qualifiersSchema } from '../../http/schemas/fanouts.ts'
import {
  fanoutViewExample,
  haltEnvelopeExample,
  pendingExample,
  resolvedEnvelopeExample,
  resultAnswerExample,
} from './examples.ts'
import type { FanoutPending, ReconciliationManifest } from './kind.ts'
import type { FanoutView, ResultView } from './service.ts'

/*
 * The HTTP shapes fan-outs answer with, built from the fan-out vocabulary (src/domain/fanout/vocabulary.ts) and
 * held to the service's views and the manifest type with `satisfies`, so the contract and the code cannot drift.
 * Request bodies are in src/http/schemas/fanouts.ts.
 */

export const fanoutStatusSchema = z.enum(FANOUT_STATUSES)
const policyRuleSchema = z.enum(POLICY_RULES)

/** A policy as stored, shown and signed: every member present. */
export const storedPolicySchema = z
  .object({
    resolve: z.array(policyRuleSchema),
    source_priority: z.array(z.string()),
    min_independent_sources: z.number().int(),
    on_qualifier_difference: z.enum(QUALIFIER_DIFFERENCE_MODES),
    on_incomplete: z.enum(INCOMPLETE_MODES),
    decomposition: z.enum(DECOMPOSITION_MODES),
  })
  .meta({ id: 'FanoutPolicyWithDefaults' }) satisfies z.ZodType<FanoutPolicy>

const overlapSchema = z.object({ fact: z.string(), subtasks: z.array(z.string()) })

const resultSummaryFields = {
  subtask_id: z.string(),
  revision: z.number().int(),
  status: z.enum(ENVELOPE_STATUSES),
  late: z.boolean(),
  result_digest: z.string(),
  received_at: z.string(),
}

/** The answer to `POST …/results`: which revision of the subtask's result now counts. */
export const resultAnswerSchema = z
  .object({ fanout_id: z.uuid(), ...resultSummaryFields })
  .meta({ id: 'FanoutResultRecorded', examples: [resultAnswerExample] }) satisfies z.ZodType<ResultView>

export const fanoutSchema = z
  .object({
    fanout_id: z.uuid(),
    orchestrator_id: z.string(),
    fanout_key: z.string(),
    question: z.string(),
    facts: z.array(z.string()),
    subtasks: z.array(
      z.object({ subtask_id: z.string(), scope: z.string().nullable(), facts: z.array(z.string()) }),
    ),
    deadline: z.string().nullable(),
    policy: storedPolicySchema,
    policy_digest: z.string(),
    decomposition: z.object({ uncovered_facts: z.array(z.string()), overlaps: z.array(overlapSchema) }),
    status: fanoutStatusSchema,
    /** The latest result of each subtask that returned, sorted by subtask id. */
    results: z.array(z.object(resultSummaryFields)),
    manifest_id: z.uuid().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'Fanout', examples: [fanoutViewExample] }) satisfies z.ZodType<FanoutView>

export const fanoutPendingSchema = z
  .object({ status: z.literal('pending'), missing_subtasks: z.array(z.string()) })
  .meta({ id: 'ReconcilePending', examples: [pendingExample] }) satisfies z.ZodType<
  FanoutPending & { status: 'pending' }
>

// ---------------------------------------------------------------------------------------------------------------
// The reconciliation manifest

const positionFields = {
  value: freeJson,
  effective_date: z.string().nullable(),
  qualifiers: qualifiersSchema,
}

const answerSchema = z.object(positionFields).meta({ id: 'FactAnswer' }) satisfies z.ZodType<Position>

const positionEntrySchema = z.object({
  position_id: z.string(),
  ...positionFields,
  claims: z.array(z.string()),
  independent_sources: z.number().int(),
  lost_by: policyRuleSchema.nullable(),
}) satisfies z.ZodType<PositionEntry>

const claimEntrySchema = z.object({
  claim_ref: z.string(),
  subtask_id: z.string(),
  revision: z.number().int(),
  position_id: z.string(),
  confidence: z.number().nullable(),
  sources: z.array(claimSourceSchema),
  out_of_scope: z.boolean(),
}) satisfies z.ZodType<ClaimEntry>

const conflictSchema = z.object({
  a: z.string(),
  b: z.string(),
  differs: z.array(z.enum(['effective_date', 'qualifiers', 'value'])),
  qualifier_differences: z.array(
    z.object({ pointer: z.string(), a: freeJson.optional(), b: freeJson.optional() }),
  ),
}) satisfies z.ZodType<Conflict>

const echoSchema = z.object({ source: z.string(), claims: z.array(z.string()) }) satisfies z.ZodType<Echo>

const variantSchema = z.object({
  qualifiers: qualifiersSchema,
  status: z.enum(['agreed', 'resolved', 'contested']),
  answer: answerSchema.nullable(),
  rule: policyRuleSchema.nullable(),
  reason: z.enum(CONTESTED_REASONS).nullable(),
}) satisfies z.ZodType<Variant>

const factEntrySchema = z
  .object({
    fact: z.string(),
    status: z.enum(FACT_STATUSES),
    answer: answerSchema.nullable(),
    variants: z.array(variantSchema),
    rule: z.enum(ANSWER_RULES).nullable(),
    reason: z.enum(CONTESTED_REASONS).nullable(),
    positions: z.array(positionEntrySchema),
    claims: z.array(claimEntrySchema),
    conflicts: z.array(conflictSchema),
    echoes: z.array(echoSchema),
  })
  .meta({ id: 'ReconciledFact' }) satisfies z.ZodType<FactEntry>

const coverageSchema = z
  .object({
    subtasks: z.array(
      z.object({
        subtask_id: z.string(),
        status: z.enum(COVERAGE_STATUSES),
        revision: z.number().int().nullable(),
        received_at: z.string().nullable(),
        late: z.boolean(),
        result_digest: z.string().nullable(),
      }),
    ),
    missing_subtasks: z.array(z.string()),
    late_subtasks: z.array(z.string()),
    needs_context: z.array(z.object({ subtask_id: z.string(), blocking_question: z.string().nullable() })),
    blocked: z.array(z.object({ subtask_id: z.string(), blocking_reason: z.string().nullable() })),
    concerns: z.array(z.object({ subtask_id: z.string(), concerns: z.array(z.string()) })),
    uncovered_facts: z.array(z.string()),
    overlaps: z.array(overlapSchema),
  })
  .meta({ id: 'FanoutCoverage' }) satisfies z.ZodType<Coverage>

const reasonSchema = z.object({ code: z.enum(REASON_CODES), subject: z.string() }) satisfies z.ZodType<Reason>

export const reconciliationManifestSchema = z
  .object({
    kind: z.literal('reconciliation'),
    manifest_id: z.uuid(),
    fanout_id: z.uuid(),
    orchestrator_id: z.string(),
    fanout_key: z.string(),
    issued_at: z.string(),
    verdict: z.enum(FANOUT_VERDICTS),
    directive: z.enum(FANOUT_DIRECTIVES),
    policy: storedPolicySchema,
    policy_digest: z.string(),
    coverage: coverageSchema,
    facts: z.array(factEntrySchema),
    reasons: z.array(reasonSchema),
    supersedes: z.uuid().nullable(),
    resolution: z.object({ by: z.string(), rationale: z.string() }).nullable(),
  })
  .meta({ id: 'ReconciliationManifest' }) satisfies z.ZodType<ReconciliationManifest>

export const reconciliationEnvelopeSchema = envelopeOf(
  reconciliationManifestSchema,
  'ReconciliationManifestEnvelope',
  [haltEnvelopeExample, resolvedEnvelopeExample],
)
