import { z } from 'zod'
import { rfc3339, sha256String } from './common.ts'

/** Free JSON (evidence content, criteria, probe params): any value; the JSON parser already bounds depth. */
const freeJson = z.json()

export const readingSchema = z.enum(['success', 'partial', 'failure'])
export const verdictSchema = z.enum([
  'SINGLE_ORCHESTRATOR',
  'AGREED',
  'GROUND_TRUTH_RESOLVES',
  'ARBITER_DECIDES',
  'DISJOINT_ACTIONS',
  'POLICY_RESOLVES',
  'CRITERIA_MATCH_EVIDENCE_DIFFERS',
  'CRITERIA_DIFFER',
  'HUMAN_RESOLVED',
])
export const directiveSchema = z.enum(['PROCEED', 'REEVALUATE', 'HALT'])
export const outcomeStatusSchema = z.enum(['open', 'decided', 'halted', 'resolved'])

const orchestratorId = z.string().min(1).max(200)

export const evidenceItemSchema = z
  .strictObject({
    kind: z.enum(['result_payload', 'exit_code', 'side_effect_receipt', 'log', 'other']),
    name: z.string().max(200).optional(),
    content: freeJson,
  })
  .meta({ id: 'EvidenceItem' })

export const evidenceListSchema = z.array(evidenceItemSchema).min(1, 'at least one evidence item').max(1000)

export const intendedActionSchema = z
  .strictObject({
    kind: z.enum(['proceed', 'compensate', 'retry', 'halt', 'other']),
    resources: z.array(z.string().max(500)).max(1000),
  })
  .meta({ id: 'IntendedAction' })

export const createOutcomeBody = z.strictObject({
  subagent_id: z.string().min(1).max(200),
  run_id: z.string().min(1).max(200),
  evidence: evidenceListSchema,
  expected_orchestrators: z.array(orchestratorId).max(100).optional(),
  deadline: rfc3339.optional(),
  arbiter_orchestrator_id: orchestratorId.optional(),
  probe: z.strictObject({ probe_id: z.uuid(), params: z.record(z.string(), freeJson).optional() }).optional(),
  fallback_policy: z.enum(['escalate', 'strictest_wins']).optional(),
})
export type CreateOutcomeBody = z.infer<typeof createOutcomeBody>

export const appendEvidenceBody = z.strictObject({ evidence: evidenceListSchema })

export const interpretationBody = z
  .strictObject({
    orchestrator_id: orchestratorId,
    success_criterion: freeJson.optional(),
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
export type InterpretationBody = z.infer<typeof interpretationBody>

/** An interpretation as manifests (and outcomes) show it. */
export const interpretationViewSchema = z
  .object({
    orchestrator_id: z.string(),
    success_criterion_signature: z.string(),
    outcome_interpretation: readingSchema,
    evidence_hash: z.string(),
    intended_action: intendedActionSchema.nullable(),
    revision: z.number().int(),
    received_at: z.string(),
  })
  .meta({ id: 'ManifestInterpretation' })

export const interpretationCreatedSchema = interpretationViewSchema.extend({ interpretation_id: z.uuid() })

const criteriaDifferenceSchema = z.object({
  pointer: z.string(),
  a: freeJson.optional(),
  b: freeJson.optional(),
})

export const divergenceReceiptSchema = z
  .object({
    kind: z.enum(['criteria', 'evidence_seen', 'interpretation']),
    actions_disjoint: z.boolean(),
    pairs: z.array(
      z.object({
        a: z.string(),
        b: z.string(),
        a_interpretation: readingSchema,
        b_interpretation: readingSchema,
        a_criterion_signature: z.string(),
        b_criterion_signature: z.string(),
        criteria_divergence: z.array(criteriaDifferenceSchema).nullable(),
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
    receipt_digest: z.string(),
  })
  .meta({ id: 'DivergenceReceipt' })

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
    result: readingSchema.nullable(),
    error: z.object({ code: z.string(), detail: z.string() }).nullable(),
  })
  .meta({ id: 'GroundTruthArbiterPredicate' })

export const manifestSchema = z
  .object({
    manifest_id: z.uuid(),
    outcome_id: z.uuid(),
    subagent_id: z.string(),
    run_id: z.string(),
    issued_at: z.string(),
    verdict: verdictSchema,
    directive: directiveSchema,
    resolved_outcome: readingSchema.nullable(),
    subagent_outcome_evidence_hash: z.string(),
    interpretations: z.array(interpretationViewSchema),
    interpretation_divergence_receipt: divergenceReceiptSchema.nullable(),
    ground_truth_arbiter_predicate: groundTruthSchema.nullable(),
    action_owner: z.string().nullable(),
    missing_orchestrators: z.array(z.string()),
    supersedes: z.uuid().nullable(),
    audit_seq: z
      .number()
      .int()
      .optional()
      .describe('only in manifests signed before audit_seq moved to the envelope; kept as signed'),
    resolution: z.object({ by: z.string(), rationale: z.string() }).nullable(),
  })
  .meta({ id: 'Manifest' })

export const envelopeSchema = z
  .object({
    manifest: manifestSchema,
    manifest_digest: z.string(),
    jws: z.string(),
    audit_seq: z
      .number()
      .int()
      .nullable()
      .describe("seq of the manifest's manifest.issued audit record; null until the sequencer has placed it"),
  })
  .meta({
    id: 'ManifestEnvelope',
    description: 'A signed manifest: verify `jws` against /.well-known/jwks.json',
  })

export const pendingSchema = z
  .object({ status: z.literal('pending'), missing_orchestrators: z.array(z.string()) })
  .meta({ id: 'EvaluationPending' })

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
    interpretations: z.array(interpretationViewSchema),
    expected_orchestrators: z.array(z.string()),
    deadline: z.string().nullable(),
    arbiter_orchestrator_id: z.string().nullable(),
    probe: z.object({ probe_id: z.string(), params: z.record(z.string(), freeJson) }).nullable(),
    fallback_policy: z.enum(['escalate', 'strictest_wins']),
    manifest_id: z.uuid().nullable(),
    reevaluation_rounds: z.number().int(),
    created_at: z.string(),
  })
  .meta({ id: 'Outcome' })

export const resolutionBody = z.strictObject({
  outcome: readingSchema,
  rationale: z.string().trim().min(1, 'rationale must not be empty').max(10_000),
  action_owner: orchestratorId.optional(),
})

export const escalationSchema = z
  .object({
    outcome_id: z.uuid(),
    subagent_id: z.string(),
    run_id: z.string(),
    status: z.enum(['open', 'resolved']),
    manifest_id: z.uuid(),
    verdict: verdictSchema,
    interpretation_divergence_receipt: divergenceReceiptSchema.nullable(),
    opened_at: z.string(),
    resolved_at: z.string().nullable(),
  })
  .meta({ id: 'Escalation' })
