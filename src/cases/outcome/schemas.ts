import { z } from 'zod'
import { LIMITS } from '../../domain/limits.ts'
import type { DivergenceReceipt } from '../../domain/outcome/divergence-receipt.ts'
import type { EvidenceItem } from '../../domain/outcome/evidence.ts'
import type { IntendedAction, ManifestInterpretation } from '../../domain/outcome/interpretation.ts'
import {
  DIVERGENCE_KINDS,
  EVIDENCE_KINDS,
  FALLBACK_POLICIES,
  INTENDED_ACTION_KINDS,
  OUTCOME_DIRECTIVES,
  OUTCOME_READINGS,
  OUTCOME_STATUSES,
  OUTCOME_VERDICTS,
} from '../../domain/outcome/vocabulary.ts'
import { freeJson, rfc3339, sha256String } from '../../http/schemas/common.ts'
import { envelopeOf } from '../../http/schemas/envelope.ts'
import { groundTruthSchema } from '../../http/schemas/ground-truth.ts'
import type { NewOutcome } from './creation.ts'
import {
  appendEvidenceExample,
  createOutcomeExample,
  haltEnvelopeExample,
  interpretationCreatedExample,
  interpretationExamples,
  outcomeExample,
  pendingExample,
  resolutionExample,
  resolvedEnvelopeExample,
} from './examples.ts'
import type { InterpretationSubmission } from './interpretations.ts'
import type { OutcomeManifest, OutcomePending, OutcomeResolution } from './kind.ts'
import type { NewSubagentPolicy, SubagentPolicyView } from './subagent-policies.ts'
import type { InterpretationView, OutcomeView } from './views.ts'

/*
 * The HTTP shapes of outcome cases, built from the outcome vocabulary (src/domain/outcome/vocabulary.ts) and held
 * to the service and manifest types with `satisfies`, so the contract and the code cannot drift apart.
 */

export const readingSchema = z.enum(OUTCOME_READINGS)
export const outcomeVerdictSchema = z.enum(OUTCOME_VERDICTS)
export const outcomeDirectiveSchema = z.enum(OUTCOME_DIRECTIVES)
export const outcomeStatusSchema = z.enum(OUTCOME_STATUSES)
const fallbackPolicySchema = z.enum(FALLBACK_POLICIES)

const orchestratorId = z.string().min(1).max(200)

// How many orchestrators an outcome may have is a limit (422), not a schema rule.
const expectedOrchestrators = z.array(orchestratorId).meta({
  description: `An outcome has at most ${LIMITS.orchestrators_per_outcome} orchestrators, expected and interpreting together (over it: 422 limit-exceeded)`,
})

export const evidenceItemSchema = z
  .strictObject({
    kind: z.enum(EVIDENCE_KINDS),
    name: z.string().max(200).optional(),
    content: freeJson,
  })
  .meta({ id: 'EvidenceItem' }) satisfies z.ZodType<EvidenceItem>

// The count of distinct items an outcome may hold (over all its versions) is a limit (422), not a schema rule.
const evidenceListSchema = z
  .array(evidenceItemSchema)
  .min(1, 'at least one evidence item')
  .meta({
    description: `An outcome lists at most ${LIMITS.evidence_items_per_outcome} evidence items over all its versions together, each version counting every item it holds (over it: 422 limit-exceeded)`,
  })

export const intendedActionSchema = z
  .strictObject({
    kind: z.enum(INTENDED_ACTION_KINDS),
    resources: z.array(z.string().max(500)).max(1000),
  })
  .meta({ id: 'IntendedAction' }) satisfies z.ZodType<IntendedAction>

export const createOutcomeBody = z
  .strictObject({
    subagent_id: z.string().min(1).max(200),
    run_id: z.string().min(1).max(200),
    evidence: evidenceListSchema,
    expected_orchestrators: expectedOrchestrators.optional(),
    deadline: rfc3339.optional(),
    arbiter_orchestrator_id: orchestratorId.optional(),
    probe: z
      .strictObject({
        probe_id: z.uuid().optional().meta({
          description:
            "Required unless the sub-agent's policy names the probe; then, if given, that probe's id",
        }),
        params: z.record(z.string(), freeJson).optional(),
      })
      .optional(),
    fallback_policy: fallbackPolicySchema.optional(),
  })
  .meta({ examples: [createOutcomeExample] }) satisfies z.ZodType<NewOutcome>

const subagentId = z.string().min(1).max(200)

export const subagentParams = z.strictObject({ subagent_id: subagentId })

/** A sub-agent policy as an admin sets it: the outcome body's rule fields, a deadline relative to creation. */
export const subagentPolicyBody = z.strictObject({
  expected_orchestrators: expectedOrchestrators,
  arbiter_orchestrator_id: orchestratorId.optional(),
  deadline_seconds: z
    .number()
    .int()
    .min(1)
    .max(3650 * 24 * 3600)
    .optional()
    .meta({ description: "Each outcome's deadline is its creation time plus this many seconds" }),
  fallback_policy: fallbackPolicySchema.optional(),
  probe: z.strictObject({ probe_id: z.uuid() }).optional(),
}) satisfies z.ZodType<NewSubagentPolicy>

export const subagentPolicySchema = z
  .object({
    subagent_id: z.string(),
    expected_orchestrators: z.array(z.string()),
    arbiter_orchestrator_id: z.string().nullable(),
    deadline_seconds: z.number().int().nullable(),
    fallback_policy: fallbackPolicySchema,
    probe: z.object({ probe_id: z.uuid() }).nullable(),
    updated_at: z.string(),
  })
  .meta({ id: 'SubagentPolicy' }) satisfies z.ZodType<SubagentPolicyView>

export const appendEvidenceBody = z
  .strictObject({ evidence: evidenceListSchema })
  .meta({ examples: [appendEvidenceExample] })

export const interpretationBody = z
  .strictObject({
    orchestrator_id: orchestratorId,
    success_criterion: freeJson.optional().meta({
      description: `At most ${LIMITS.success_criterion_bytes} bytes of canonical JSON (over it: 422 limit-exceeded)`,
    }),
    success_criterion_hash: sha256String.optional(),
    outcome_interpretation: readingSchema,
    evidence_hash: sha256String.optional(),
    intended_action: intendedActionSchema.optional(),
    rationale: z.string().max(10_000).optional(),
  })
  .refine((body) => (body.success_criterion === undefined) !== (body.success_criterion_hash === undefined), {
    message: 'give exactly one of success_criterion or success_criterion_hash',
    path: ['success_criterion'],
  })
  .meta({ examples: interpretationExamples }) satisfies z.ZodType<InterpretationSubmission>

/** An interpretation as manifests (and outcomes) show it. */
export const manifestInterpretationSchema = z
  .object({
    orchestrator_id: z.string(),
    success_criterion_signature: z.string(),
    outcome_interpretation: readingSchema,
    evidence_hash: z.string(),
    intended_action: intendedActionSchema.nullable(),
    revision: z.number().int(),
    received_at: z.string(),
  })
  .meta({ id: 'ManifestInterpretation' }) satisfies z.ZodType<ManifestInterpretation>

export const interpretationCreatedSchema = manifestInterpretationSchema
  .extend({ interpretation_id: z.uuid() })
  .meta({ examples: [interpretationCreatedExample] }) satisfies z.ZodType<InterpretationView>

const jsonDifferenceSchema = z.object({
  pointer: z.string(),
  a: freeJson.optional(),
  b: freeJson.optional(),
})

export const divergenceReceiptSchema = z
  .object({
    kind: z.enum(DIVERGENCE_KINDS),
    actions_disjoint: z.boolean(),
    pairs: z.array(
      z.object({
        a: z.string(),
        b: z.string(),
        a_interpretation: readingSchema,
        b_interpretation: readingSchema,
        a_criterion_signature: z.string(),
        b_criterion_signature: z.string(),
        criteria_divergence: z.array(jsonDifferenceSchema).nullable(),
        evidence_divergence: z
          .object({
            a_evidence_hash: z.string(),
            b_evidence_hash: z.string(),
            only_in_a: z.array(z.string()),
            only_in_b: z.array(z.string()),
          })
          .nullable(),
      }),
    ),
    receipt_digest: z.templateLiteral(['sha256:', z.string()]),
  })
  .meta({ id: 'DivergenceReceipt' }) satisfies z.ZodType<DivergenceReceipt>

export const outcomeManifestSchema = z
  .object({
    kind: z.literal('outcome'),
    manifest_id: z.uuid(),
    outcome_id: z.uuid(),
    subagent_id: z.string(),
    run_id: z.string(),
    issued_at: z.string(),
    verdict: outcomeVerdictSchema,
    directive: outcomeDirectiveSchema,
    resolved_outcome: readingSchema.nullable(),
    subagent_outcome_evidence_hash: z.string(),
    interpretations: z.array(manifestInterpretationSchema),
    interpretation_divergence_receipt: divergenceReceiptSchema.nullable(),
    ground_truth_arbiter_predicate: groundTruthSchema.nullable(),
    action_owner: z.string().nullable(),
    missing_orchestrators: z.array(z.string()),
    supersedes: z.uuid().nullable(),
    resolution: z.object({ by: z.string(), rationale: z.string() }).nullable(),
  })
  .meta({ id: 'OutcomeManifest' }) satisfies z.ZodType<
  Omit<OutcomeManifest, 'ground_truth_arbiter_predicate'>
>

export const outcomeEnvelopeSchema = envelopeOf(outcomeManifestSchema, 'OutcomeManifestEnvelope', [
  haltEnvelopeExample,
  resolvedEnvelopeExample,
])

export const pendingSchema = z
  .object({ status: z.literal('pending'), missing_orchestrators: z.array(z.string()) })
  .meta({ id: 'EvaluationPending', examples: [pendingExample] }) satisfies z.ZodType<
  OutcomePending & { status: 'pending' }
>

export const outcomeSchema = z
  .object({
    outcome_id: z.uuid(),
    subagent_id: z.string(),
    run_id: z.string(),
    status: outcomeStatusSchema,
    evidence_hash: z.string(),
    evidence_versions: z.array(
      z.object({ evidence_hash: z.string(), item_hashes: z.array(z.string()), created_at: z.string() }),
    ),
    evidence: z.array(evidenceItemSchema),
    interpretations: z.array(manifestInterpretationSchema),
    expected_orchestrators: z.array(z.string()),
    deadline: z.string().nullable(),
    arbiter_orchestrator_id: z.string().nullable(),
    probe: z.object({ probe_id: z.string(), params: z.record(z.string(), freeJson) }).nullable(),
    fallback_policy: fallbackPolicySchema,
    manifest_id: z.uuid().nullable(),
    reevaluation_rounds: z.number().int(),
    created_at: z.string(),
  })
  .meta({ id: 'Outcome', examples: [outcomeExample] }) satisfies z.ZodType<OutcomeView>

export const resolutionBody = z
  .strictObject({
    outcome: readingSchema,
    rationale: z.string().trim().min(1, 'rationale must not be empty').max(10_000),
    action_owner: orchestratorId.optional(),
  })
  .meta({ examples: [resolutionExample] }) satisfies z.ZodType<OutcomeResolution>
