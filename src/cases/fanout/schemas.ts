import { z } from 'zod'
import type { ClaimSource, SubmittedClaim } from '../../domain/fanout/claims.ts'
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
} from '../../domain/fanout/reconciliation.ts'
import type { FactResolution } from '../../domain/fanout/resolution.ts'
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
  type FanoutPolicyInput,
  INCOMPLETE_MODES,
  POLICY_RULES,
  QUALIFIER_DIFFERENCE_MODES,
  REASON_CODES,
} from '../../domain/fanout/vocabulary.ts'
import { LIMITS } from '../../domain/limits.ts'
import { REPORT_STATUSES } from '../../domain/status-report.ts'
import { freeJson, rfc3339, sha256String } from '../../http/schemas/common.ts'
import { envelopeOf } from '../../http/schemas/envelope.ts'
import { statusReportSchema } from '../../http/schemas/status-report.ts'
import { agentIdentityText, required, text } from '../../http/schemas/text.ts'
import {
  fanoutViewExample,
  haltEnvelopeExample,
  pendingExample,
  resolvedEnvelopeExample,
  resultAnswerExample,
  resultExamples,
} from './examples.ts'
import type { FanoutPending, ReconciliationManifest } from './kind.ts'
import type { FanoutView, ResultView } from './service.ts'

/*
 * The HTTP shapes of fan-outs, built from the fan-out vocabulary (src/domain/fanout/vocabulary.ts).
 *
 * Request bodies (first): creating one, a worker's result, asking for reconciliation, and a human resolution.
 * Like every request schema here, nothing is transformed: defaults (`policy` members, absent `effective_date` /
 * `confidence` / `qualifiers`) are filled in by the domain (`withPolicyDefaults`, `positionOf`), so digests of a
 * parsed body are digests of the body as submitted. References (a result's `subtask_id`, a claim's `fact`) are
 * checked against the fan-out afterwards, as 422s.
 *
 * Answers (after): held to the service's views and the manifest type with `satisfies`, so the contract and the
 * code cannot drift.
 */

/** A fact key: `vantage.enterprise.floor`. */
export const FACT_KEY_PATTERN = /^[A-Za-z0-9_.:/-]{1,200}$/
/** A subtask id: `st_3`. No `#`, so `<subtask_id>#<index>` claim refs are unambiguous. */
export const SUBTASK_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,100}$/
/** The caller's own name for a fan-out, unique per orchestrator. */
export const FANOUT_KEY_PATTERN = /^[A-Za-z0-9_.:/-]{1,200}$/

export const MAX_FACTS = 200
export const MAX_SUBTASKS = 100
export const MAX_URI_LENGTH = 2000
/*
 * Claims per result, sources and qualifiers per claim, and the lengths of qualifier names and values are limits
 * (src/domain/limits.ts), not schema rules: over one, a result is refused with 422 `limit-exceeded` naming it,
 * after the checks that come first (the schema, then ownership).
 */
const MAX_EXCERPT_LENGTH = 10_000
const MAX_QUESTION_LENGTH = 10_000
const MAX_RATIONALE_LENGTH = 10_000

const factKey = z
  .string({ error: required('must be a string') })
  .regex(FACT_KEY_PATTERN, 'must be 1–200 characters of A–Z, a–z, 0–9 and _ . : / -')
const subtaskId = z
  .string({ error: required('must be a string') })
  .regex(SUBTASK_ID_PATTERN, 'must be 1–100 characters of A–Z, a–z, 0–9 and _ . : -')

/**
 * A JSON value other than null. Written out rather than as `z.json()` so a missing or null value gets
 * its own message instead of "Invalid input".
 */
const nonNullJson = z.union(
  [z.string(), z.number(), z.boolean(), z.array(freeJson), z.record(z.string(), freeJson)],
  {
    error: (issue) =>
      issue.input === undefined ? 'required' : issue.input === null ? 'must not be null' : 'must be JSON',
  },
)

/** `YYYY-MM-DD`, a day that exists (`2025-02-29` does not). */
const calendarDate = z.iso.date({ error: 'must be a date YYYY-MM-DD that exists in the calendar' })

export const qualifiersSchema = z
  .record(
    z.string().min(1, 'a qualifier needs a name'),
    z.union([z.string(), z.number(), z.boolean()], { error: 'must be a string, number or boolean' }),
    { error: 'must be an object of string, number or boolean values' },
  )
  .meta({
    description: `At most ${LIMITS.qualifiers_per_claim} per claim; names of at most ${LIMITS.qualifier_key_length} characters, string values of at most ${LIMITS.qualifier_value_length} (over a limit: 422 limit-exceeded)`,
  })

export const claimSourceSchema = z
  .strictObject({
    uri: z
      .string({ error: required('must be a string') })
      .min(1, 'must not be empty')
      .max(MAX_URI_LENGTH, `at most ${MAX_URI_LENGTH} characters`),
    excerpt: z
      .string()
      .max(MAX_EXCERPT_LENGTH, `at most ${MAX_EXCERPT_LENGTH} characters`)
      .nullable()
      .optional(),
    content_digest: sha256String.nullable().optional(),
    observed_at: rfc3339.nullable().optional(),
  })
  .meta({ id: 'ClaimSource' }) satisfies z.ZodType<ClaimSource>

export const claimSchema = z
  .strictObject({
    fact: z.string({ error: required('must be a string') }),
    value: nonNullJson,
    effective_date: calendarDate.nullable().optional(),
    qualifiers: qualifiersSchema.optional(),
    confidence: z
      .number()
      .min(0, 'must be between 0 and 1')
      .max(1, 'must be between 0 and 1')
      .nullable()
      .optional(),
    sources: z
      .array(claimSourceSchema, { error: required('must be an array') })
      .min(1, 'at least one source')
      .meta({ description: `At most ${LIMITS.sources_per_claim} (over it: 422 limit-exceeded)` }),
  })
  .meta({ id: 'Claim' }) satisfies z.ZodType<SubmittedClaim>

/** The worker that returned: its model and context, each an identity like a review's judges'. */
export const workerSchema = z.strictObject({
  model: agentIdentityText.nullable().optional(),
  context_id: agentIdentityText.nullable().optional(),
})

/** `POST /v1/fanouts/{id}/results`: one worker's return in the status report. */
export const fanoutResultBody = statusReportSchema({
  every: { subtask_id: z.string({ error: required('must be a string') }), worker: workerSchema.optional() },
  withEvidence: {
    claims: z
      .array(claimSchema, { error: 'must be an array' })
      .optional()
      .meta({
        description: `At most ${LIMITS.claims_per_result} per result, and ${LIMITS.claims_per_fanout} over the latest results of the fan-out (over a limit: 422 limit-exceeded)`,
      }),
  },
}).meta({ id: 'FanoutResult', examples: resultExamples })
export type FanoutResultBody = z.infer<typeof fanoutResultBody>

/** Items of a list that repeat an earlier item, each reported at its own index. */
function reportDuplicates(
  ctx: z.core.$RefinementCtx,
  items: readonly string[],
  pathOf: (index: number) => (string | number)[],
  message: string,
): void {
  const seen = new Set<string>()
  items.forEach((item, index) => {
    if (seen.has(item)) ctx.addIssue({ code: 'custom', path: pathOf(index), message, input: item })
    seen.add(item)
  })
}

export const fanoutPolicySchema = z
  .strictObject({
    resolve: z.array(z.enum(POLICY_RULES, { error: `must be one of ${POLICY_RULES.join(', ')}` }), {
      error: 'must be an array',
    }),
    source_priority: z.array(text(MAX_URI_LENGTH), { error: 'must be an array' }),
    min_independent_sources: z.int({ error: 'must be an integer' }).min(1, 'must be at least 1'),
    on_qualifier_difference: z.enum(QUALIFIER_DIFFERENCE_MODES, {
      error: `must be one of ${QUALIFIER_DIFFERENCE_MODES.join(', ')}`,
    }),
    on_incomplete: z.enum(INCOMPLETE_MODES, { error: `must be one of ${INCOMPLETE_MODES.join(', ')}` }),
    decomposition: z.enum(DECOMPOSITION_MODES, { error: `must be one of ${DECOMPOSITION_MODES.join(', ')}` }),
  })
  .partial()
  .superRefine((policy, ctx) => {
    // Listing a rule or a prefix twice changes nothing but reads as if it did.
    reportDuplicates(ctx, policy.resolve ?? [], (i) => ['resolve', i], 'this rule is already listed')
    reportDuplicates(
      ctx,
      policy.source_priority ?? [],
      (i) => ['source_priority', i],
      'this prefix is already listed',
    )
  })
  .meta({ id: 'FanoutPolicy' }) satisfies z.ZodType<FanoutPolicyInput>

export const subtaskSchema = z.strictObject({
  subtask_id: subtaskId,
  scope: z
    .string()
    .max(MAX_QUESTION_LENGTH, `at most ${MAX_QUESTION_LENGTH} characters`)
    .nullable()
    .optional(),
  facts: z.array(factKey, { error: required('must be an array') }),
})

/**
 * `POST /v1/fanouts`. Beyond each field's own rules: facts, subtask ids, and the facts within one
 * subtask are unique, and a subtask owns only facts the fan-out lists. (Whether the decomposition
 * covers every fact once is not a schema matter: see `checkDecomposition`.)
 */
export const createFanoutBody = z
  .strictObject({
    orchestrator_id: z
      .string({ error: required('must be a string') })
      .min(1, 'must not be empty')
      .max(200, 'at most 200 characters'),
    fanout_key: z
      .string({ error: required('must be a string') })
      .regex(FANOUT_KEY_PATTERN, 'must be 1–200 characters of A–Z, a–z, 0–9 and _ . : / -'),
    question: text(MAX_QUESTION_LENGTH),
    facts: z
      .array(factKey, { error: required('must be an array') })
      .min(1, 'at least one fact')
      .max(MAX_FACTS, `at most ${MAX_FACTS} facts`),
    subtasks: z
      .array(subtaskSchema, { error: required('must be an array') })
      .min(1, 'at least one subtask')
      .max(MAX_SUBTASKS, `at most ${MAX_SUBTASKS} subtasks`),
    deadline: rfc3339.nullable().optional(),
    policy: fanoutPolicySchema.optional(),
  })
  .superRefine((body, ctx) => {
    reportDuplicates(ctx, body.facts, (i) => ['facts', i], 'this fact is already listed')
    reportDuplicates(
      ctx,
      body.subtasks.map((subtask) => subtask.subtask_id),
      (i) => ['subtasks', i, 'subtask_id'],
      'this subtask id is already used',
    )
    const facts = new Set(body.facts)
    body.subtasks.forEach((subtask, i) => {
      reportDuplicates(
        ctx,
        subtask.facts,
        (j) => ['subtasks', i, 'facts', j],
        'this subtask already lists this fact',
      )
      subtask.facts.forEach((fact, j) => {
        if (!facts.has(fact)) {
          ctx.addIssue({
            code: 'custom',
            path: ['subtasks', i, 'facts', j],
            message: 'not one of the fan-out’s facts',
            input: fact,
          })
        }
      })
    })
  })
export type CreateFanoutBody = z.infer<typeof createFanoutBody>

/**
 * `POST /v1/fanouts/{id}/reconcile`: no body, `{}`, or `{"close": true}` to stop waiting for missing subtasks.
 * Fastify hands a request without a body over as null.
 */
export const reconcileFanoutBody = z
  .strictObject({ close: z.boolean({ error: 'must be true or false' }).optional() })
  .nullish()
export type ReconcileFanoutBody = z.infer<typeof reconcileFanoutBody>

/** An answer a human gives a contested fact; absent `effective_date` / `qualifiers` mean null / `{}`. */
export const fanoutAnswerSchema = z.strictObject(
  {
    value: nonNullJson,
    effective_date: calendarDate.nullable().optional(),
    qualifiers: qualifiersSchema.optional(),
  },
  { error: required('must be an answer object or null') },
)

/**
 * `POST /v1/fanouts/{id}/resolution`. Every contested fact gets an item, with an answer or null for
 * "no answer"; which facts those are is checked against the HALT (`resolutionErrors`), as a 422.
 */
export const fanoutResolutionBody = z.strictObject({
  facts: z
    .array(
      z.strictObject({
        fact: z.string({ error: required('must be a string') }),
        answer: fanoutAnswerSchema.nullable(),
      }),
      { error: required('must be an array') },
    )
    .max(MAX_FACTS, `at most ${MAX_FACTS} facts`),
  rationale: text(MAX_RATIONALE_LENGTH),
}) satisfies z.ZodType<{ facts: FactResolution[]; rationale: string }>
export type FanoutResolutionBody = z.infer<typeof fanoutResolutionBody>

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
  status: z.enum(REPORT_STATUSES),
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
