/**
 * The HTTP shapes of reviews, built from the review vocabulary (src/domain/review/vocabulary.ts) and held to the
 * service and manifest types with `satisfies`, so the contract and the code cannot drift apart. Nothing here
 * transforms a body: what validates is exactly what was submitted, so the digests of a parsed body
 * (`request_digest`, `verdict_digest`) are digests of the body as submitted. Rules that need the review itself
 * (the panel rules, an unknown `judge_id`, `findings` outside a council) are checked afterwards.
 */
import { z } from 'zod'
import { LIMITS } from '../../domain/limits.ts'
import type { ManifestVerdictItem, ReviewConcern, ReviewDivergence } from '../../domain/review/decide.ts'
import type { Finding, MergedFinding } from '../../domain/review/findings.ts'
import type { ReviewJudge, SubmittedJudge } from '../../domain/review/panel.ts'
import {
  DEBATE_ROLES,
  FINDING_SEVERITIES,
  JUDGE_STAGES,
  REVIEW_DIRECTIVES,
  REVIEW_MODES,
  REVIEW_STATUSES,
  REVIEW_VERDICTS,
  type ReviewMode,
} from '../../domain/review/vocabulary.ts'
import { SHA256_PATTERN } from '../../domain/shared/canonical-json.ts'
import { REPORT_STATUSES } from '../../domain/status-report.ts'
import { AppError } from '../../errors.ts'
import { envelopeOf } from '../../http/schemas/envelope.ts'
import { statusReportSchema } from '../../http/schemas/status-report.ts'
import { agentIdentityText, required, text } from '../../http/schemas/text.ts'
import type { ReviewManifest, ReviewPending } from './kind.ts'
import type { ReviewSubject } from './repository.ts'
import type { NewReview, ReviewView, RevisionSubmission, SubmittedSubject, VerdictAnswer } from './service.ts'

/** The caller's own name for a review, unique per orchestrator: `PR-481`. */
export const REVIEW_KEY_PATTERN = /^[A-Za-z0-9_.:/-]{1,200}$/
/** A judge's id within its panel: `spec`. */
export const JUDGE_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,100}$/
const MAX_DESCRIPTION = 10_000
const MAX_URI = 2000
const MAX_FINDING_TITLE = 300
const MAX_FINDING_LOCATION = 500
const MAX_FREE_TEXT = 10_000

const optionalText = (max: number) =>
  z.string({ error: 'must be a string or null' }).max(max, `at most ${max} characters`).nullable().optional()

export const reviewModeSchema = z.enum(REVIEW_MODES, { error: `must be one of ${REVIEW_MODES.join(', ')}` })
export const reviewStatusSchema = z.enum(REVIEW_STATUSES)
const judgeStageSchema = z.literal(JUDGE_STAGES, { error: `must be one of ${JUDGE_STAGES.join(', ')}` })
const debateRoleSchema = z.enum(DEBATE_ROLES, { error: `must be one of ${DEBATE_ROLES.join(', ')}` })
const reportStatusSchema = z.enum(REPORT_STATUSES)
const severitySchema = z.enum(FINDING_SEVERITIES, {
  error: `must be one of ${[...FINDING_SEVERITIES].reverse().join(', ')}`,
})

export const subjectSchema = z
  .strictObject(
    {
      digest: z
        .string({ error: required('must be a string') })
        .regex(SHA256_PATTERN, 'must be sha256:<64 lowercase hex>'),
      description: optionalText(MAX_DESCRIPTION),
      uri: optionalText(MAX_URI),
    },
    { error: required('must be an object') },
  )
  .meta({ id: 'SubmittedSubject' }) satisfies z.ZodType<SubmittedSubject>

const implementerSchema = z.strictObject(
  { model: agentIdentityText, context_id: agentIdentityText },
  { error: required('must be an object') },
)

export const judgeSchema = z
  .strictObject({
    judge_id: z
      .string({ error: required('must be a string') })
      .regex(JUDGE_ID_PATTERN, 'must be 1–100 characters of A–Z, a–z, 0–9 and _ . : -'),
    model: agentIdentityText,
    context_id: agentIdentityText,
    // Null is kept, not dropped: a null stage or role still counts as present where the mode allows none.
    stage: judgeStageSchema.nullable().optional(),
    role: debateRoleSchema.nullable().optional(),
  })
  .meta({ id: 'PanelJudge' }) satisfies z.ZodType<SubmittedJudge>

const EXAMPLE_DIGEST = `sha256:${'3f'.repeat(32)}`

/** One creation body per mode, for the OpenAPI document (and the README's worked examples). */
export const CREATE_REVIEW_EXAMPLES = {
  do_and_judge: {
    orchestrator_id: 'orch-a',
    review_key: 'PR-480',
    mode: 'do_and_judge',
    subject: { digest: EXAMPLE_DIGEST, description: 'typo fix in the refund mail' },
    implementer: { model: 'model-m', context_id: 'ctx-1' },
    judges: [{ judge_id: 'solo', model: 'model-m', context_id: 'ctx-9' }],
  },
  two_stage: {
    orchestrator_id: 'orch-a',
    review_key: 'PR-481',
    mode: 'two_stage',
    subject: {
      digest: EXAMPLE_DIGEST,
      description: 'refund retry fix',
      uri: 'https://git.example/pr/481',
    },
    implementer: { model: 'model-m', context_id: 'ctx-1' },
    judges: [
      { judge_id: 'spec', model: 'model-l', context_id: 'ctx-2', stage: 1 },
      { judge_id: 'quality', model: 'model-l', context_id: 'ctx-3', stage: 2 },
    ],
  },
  debate: {
    orchestrator_id: 'orch-a',
    review_key: 'PR-482',
    mode: 'debate',
    subject: { digest: EXAMPLE_DIGEST, description: 'drop the legacy refunds column' },
    implementer: { model: 'model-m', context_id: 'ctx-1' },
    judges: [
      { judge_id: 'amy', model: 'model-l', context_id: 'ctx-2', role: 'judge' },
      { judge_id: 'zed', model: 'model-k', context_id: 'ctx-3', role: 'judge' },
      { judge_id: 'moderator', model: 'model-j', context_id: 'ctx-4', role: 'meta' },
    ],
  },
  council: {
    orchestrator_id: 'orch-a',
    review_key: 'PR-483',
    mode: 'council',
    subject: { digest: EXAMPLE_DIGEST, description: 'cache layer for refund lookups' },
    implementer: { model: 'model-m', context_id: 'ctx-1' },
    judges: [
      { judge_id: 'c1', model: 'model-a', context_id: 'ctx-5' },
      { judge_id: 'c2', model: 'model-b', context_id: 'ctx-6' },
      { judge_id: 'c3', model: 'model-c', context_id: 'ctx-7' },
    ],
  },
} satisfies Record<ReviewMode, NewReview>

/** `POST /v1/reviews`. Panel rules (counts, stage/role placement, independence) are checked after, as 422s. */
export const createReviewBody = z
  .strictObject({
    orchestrator_id: z
      .string({ error: required('must be a string') })
      .min(1, 'must not be empty')
      .max(200, 'at most 200 characters'),
    review_key: z
      .string({ error: required('must be a string') })
      .regex(REVIEW_KEY_PATTERN, 'must be 1–200 characters of A–Z, a–z, 0–9 and _ . : / -'),
    mode: reviewModeSchema,
    subject: subjectSchema,
    implementer: implementerSchema,
    // How many judges a mode takes is a panel rule (a 422 naming it), checked after the schema; a panel larger
    // than any mode takes is refused on its size alone, so a body of thousands of judges buys one violation.
    judges: z
      .array(judgeSchema, { error: required('must be an array') })
      .min(1, 'at least one judge')
      .describe(
        'The panel, in order. How many judges a mode takes (do_and_judge 1, two_stage 2, debate 2 and at most one meta, council 2–10) is a panel rule: a panel of another size is a 422 naming the rule.',
      ),
  })
  .meta({
    id: 'CreateReview',
    description:
      'A change and the panel that judges it. One example per mode: do_and_judge, two_stage, debate, council.',
    examples: Object.values(CREATE_REVIEW_EXAMPLES),
  }) satisfies z.ZodType<NewReview>

export const findingSchema = z
  .strictObject({
    severity: severitySchema,
    title: text(MAX_FINDING_TITLE),
    location: optionalText(MAX_FINDING_LOCATION),
    lens: optionalText(MAX_FREE_TEXT),
    detail: optionalText(MAX_FREE_TEXT),
  })
  .meta({ id: 'CouncilFinding' }) satisfies z.ZodType<Finding>

/**
 * `POST /v1/reviews/{id}/verdicts`: a judge's return in the status report fan-out results use (the same
 * schema factory, the same conditional keys and 400s), plus the judge, the revision judged and, in a council,
 * its findings.
 */
export const verdictBody = statusReportSchema({
  every: {
    judge_id: z
      .string({ error: required('must be a string') })
      .min(1, 'must not be empty')
      .max(100, 'at most 100 characters'),
    revision: z.int({ error: required('must be an integer') }).min(0, 'must be at least 0'),
    findings: z
      .array(findingSchema, { error: 'must be an array' })
      .optional()
      .meta({
        description: `At most ${LIMITS.findings_per_verdict}; a verdict is at most ${LIMITS.verdict_bytes} bytes of canonical JSON (over a limit: 422 limit-exceeded)`,
      }),
  },
  withEvidence: {},
}).meta({
  id: 'JudgeVerdict',
  examples: [
    {
      judge_id: 'spec',
      revision: 0,
      status: 'DONE_WITH_CONCERNS',
      summary: 'Retries are bounded as the spec asks.',
      evidence: ['test refund_retry_once passes'],
      concerns: ['no test for the retry path after a timeout'],
    },
    {
      judge_id: 'zed',
      revision: 0,
      status: 'BLOCKED',
      summary: 'The migration drops a column still read by the ledger job.',
      blocking_reason: 'refunds.legacy_id is read by ledger-sync',
    },
    {
      judge_id: 'c1',
      revision: 0,
      status: 'DONE',
      summary: 'Two issues found.',
      evidence: ['read cache.ts'],
      findings: [{ severity: 'medium', title: 'Race in cache', location: 'cache.ts', lens: 'concurrency' }],
    },
  ],
})
export type VerdictBody = z.infer<typeof verdictBody>

/** `findings` belong to council verdicts only: anywhere else the key is refused, like a key of another status. */
export function refuseFindingsOutsideCouncil(mode: ReviewMode, body: VerdictBody): void {
  if (mode === 'council' || !('findings' in body)) return
  const message = 'allowed only in council reviews'
  throw new AppError('VALIDATION', `body/findings: ${message}`, {}, [{ path: 'body/findings', message }])
}

/** `POST /v1/reviews/{id}/revisions`. */
export const revisionBody = z.strictObject({
  subject: subjectSchema,
}) satisfies z.ZodType<RevisionSubmission>

/** `POST /v1/reviews/{id}/decide`: no body, or `{}`. */
export const decideBody = z.strictObject({}).nullish()

// Responses --------------------------------------------------------------------------------------------------

export const reviewSubjectSchema = z
  .object({ digest: z.string(), description: z.string().nullable(), uri: z.string().nullable() })
  .meta({ id: 'ReviewSubject' }) satisfies z.ZodType<ReviewSubject>

export const reviewJudgeSchema = z
  .object({
    judge_id: z.string(),
    model: z.string(),
    context_id: z.string(),
    stage: judgeStageSchema.nullable(),
    role: debateRoleSchema.nullable(),
  })
  .meta({ id: 'ReviewJudge' }) satisfies z.ZodType<ReviewJudge>

export const verdictItemSchema = z
  .object({
    judge_id: z.string(),
    model: z.string(),
    stage: judgeStageSchema.nullable(),
    role: debateRoleSchema.nullable(),
    status: reportStatusSchema,
    summary: z.string(),
    concerns: z.array(z.string()),
    blocking_question: z.string().nullable(),
    blocking_reason: z.string().nullable(),
    verdict_digest: z.string(),
  })
  .meta({ id: 'ReviewVerdictItem' }) satisfies z.ZodType<ManifestVerdictItem>

export const reviewSchema = z
  .object({
    review_id: z.uuid(),
    orchestrator_id: z.string(),
    review_key: z.string(),
    mode: reviewModeSchema,
    subject: reviewSubjectSchema,
    implementer: z.object({ model: z.string(), context_id: z.string() }),
    judges: z.array(reviewJudgeSchema),
    revision: z.number().int(),
    status: reviewStatusSchema,
    verdicts: z.array(verdictItemSchema).describe('the latest verdict of each judge in the current revision'),
    manifest_id: z.uuid().nullable().describe('the latest manifest of the review'),
    created_at: z.string(),
  })
  .meta({ id: 'Review' }) satisfies z.ZodType<ReviewView>

export const verdictAnswerSchema = z
  .object({
    review_id: z.uuid(),
    judge_id: z.string(),
    revision: z.number().int(),
    status: reportStatusSchema,
    verdict_digest: z.string().describe('sha256(JCS(body as submitted))'),
    received_at: z.string(),
  })
  .meta({ id: 'ReviewVerdictRecorded' }) satisfies z.ZodType<VerdictAnswer>

const mergedFindingSchema = z
  .object({
    fingerprint: z.templateLiteral(['sha256:', z.string()]),
    severity: severitySchema,
    title: z.string(),
    location: z.string().nullable(),
    reported_by: z.array(z.string()),
    models: z.array(z.string()),
    confidence: z.number(),
  })
  .meta({ id: 'ReviewFinding' }) satisfies z.ZodType<MergedFinding>

const EXAMPLE_VERDICT_DIGEST = `sha256:${'a1'.repeat(32)}`
const EXAMPLE_MANIFEST_BASE = {
  kind: 'review',
  manifest_id: '0b7f6c1e-2f1d-4c55-9a8e-2d1c4b5a6f70',
  review_id: '5d1e8f3a-7b2c-4d9e-8f10-3a2b1c0d9e8f',
  orchestrator_id: 'orch-a',
  revision: 0,
  implementer: { model: 'model-m', context_id: 'ctx-1' },
  issued_at: '2026-11-29T18:00:00.000Z',
  supersedes: null,
} as const

/** A judge item as a manifest example shows it. */
const exampleItem = (
  judge_id: string,
  model: string,
  status: (typeof REPORT_STATUSES)[number],
  extra: Partial<ManifestVerdictItem>,
): ManifestVerdictItem => ({
  judge_id,
  model,
  stage: null,
  role: null,
  status,
  summary: `${judge_id} returned ${status}`,
  concerns: [],
  blocking_question: null,
  blocking_reason: null,
  verdict_digest: EXAMPLE_VERDICT_DIGEST,
  ...extra,
})

const withNullDetails = (judge: (typeof CREATE_REVIEW_EXAMPLES)[ReviewMode]['judges'][number]) => ({
  stage: null,
  role: null,
  ...judge,
})

/** One manifest per mode, for the OpenAPI document. */
export const REVIEW_MANIFEST_EXAMPLES: ReviewManifest[] = [
  {
    ...EXAMPLE_MANIFEST_BASE,
    review_key: 'PR-480',
    mode: 'do_and_judge',
    subject: { digest: EXAMPLE_DIGEST, description: 'typo fix in the refund mail', uri: null },
    judges: CREATE_REVIEW_EXAMPLES.do_and_judge.judges.map(withNullDetails),
    verdict: 'BLOCKED',
    directive: 'REVISE',
    verdicts: [exampleItem('solo', 'model-m', 'BLOCKED', { blocking_reason: 'the refund is retried twice' })],
    concerns: [],
    blocking_question: null,
    blocking_reason: 'the refund is retried twice',
    divergence: null,
    findings: [],
  },
  {
    ...EXAMPLE_MANIFEST_BASE,
    review_key: 'PR-481',
    mode: 'two_stage',
    subject: { digest: EXAMPLE_DIGEST, description: 'refund retry fix', uri: 'https://git.example/pr/481' },
    judges: CREATE_REVIEW_EXAMPLES.two_stage.judges.map(withNullDetails),
    verdict: 'DONE_WITH_CONCERNS',
    directive: 'APPLY',
    verdicts: [
      exampleItem('quality', 'model-l', 'DONE_WITH_CONCERNS', { stage: 2, concerns: ['rename retryOnce'] }),
      exampleItem('spec', 'model-l', 'DONE_WITH_CONCERNS', {
        stage: 1,
        concerns: ['no test for the retry path'],
      }),
    ],
    concerns: [
      { judge_id: 'quality', concern: 'rename retryOnce' },
      { judge_id: 'spec', concern: 'no test for the retry path' },
    ],
    blocking_question: null,
    blocking_reason: null,
    divergence: null,
    findings: [],
  },
  {
    ...EXAMPLE_MANIFEST_BASE,
    review_key: 'PR-482',
    mode: 'debate',
    revision: 2,
    subject: { digest: EXAMPLE_DIGEST, description: 'drop the legacy refunds column', uri: null },
    judges: CREATE_REVIEW_EXAMPLES.debate.judges.map(withNullDetails),
    verdict: 'BLOCKED',
    directive: 'HAND_BACK',
    verdicts: [
      exampleItem('amy', 'model-l', 'DONE', { role: 'judge' }),
      exampleItem('zed', 'model-k', 'BLOCKED', {
        role: 'judge',
        blocking_reason: 'migration drops a column in use',
      }),
    ],
    concerns: [],
    blocking_question: null,
    blocking_reason: 'migration drops a column in use',
    divergence: { a: 'amy', b: 'zed', a_status: 'DONE', b_status: 'BLOCKED' },
    findings: [],
  },
  {
    ...EXAMPLE_MANIFEST_BASE,
    review_key: 'PR-483',
    mode: 'council',
    subject: { digest: EXAMPLE_DIGEST, description: 'cache layer for refund lookups', uri: null },
    judges: CREATE_REVIEW_EXAMPLES.council.judges.map(withNullDetails),
    verdict: 'ADVISORY',
    directive: 'ADVISORY',
    verdicts: [
      exampleItem('c1', 'model-a', 'DONE', {}),
      exampleItem('c2', 'model-b', 'DONE', {}),
      exampleItem('c3', 'model-c', 'DONE', {}),
    ],
    concerns: [],
    blocking_question: null,
    blocking_reason: null,
    divergence: null,
    findings: [
      {
        fingerprint: `sha256:${'c4'.repeat(32)}`,
        severity: 'critical',
        title: 'race in cache',
        location: 'cache.ts',
        reported_by: ['c1', 'c2'],
        models: ['model-a', 'model-b'],
        confidence: 0.6666666666666666,
      },
    ],
  },
]

export const reviewManifestSchema = z
  .object({
    kind: z.literal('review'),
    manifest_id: z.uuid(),
    review_id: z.uuid(),
    orchestrator_id: z.string(),
    review_key: z.string(),
    mode: reviewModeSchema,
    revision: z.number().int(),
    subject: reviewSubjectSchema,
    implementer: z.object({ model: z.string(), context_id: z.string() }),
    judges: z.array(reviewJudgeSchema),
    issued_at: z.string(),
    verdict: z.enum(REVIEW_VERDICTS),
    directive: z.enum(REVIEW_DIRECTIVES),
    verdicts: z.array(verdictItemSchema),
    concerns: z.array(
      z.object({ judge_id: z.string(), concern: z.string() }) satisfies z.ZodType<ReviewConcern>,
    ),
    blocking_question: z.string().nullable(),
    blocking_reason: z.string().nullable(),
    divergence: z
      .object({
        a: z.string(),
        b: z.string(),
        a_status: reportStatusSchema,
        b_status: reportStatusSchema,
      })
      .nullable() satisfies z.ZodType<ReviewDivergence | null>,
    findings: z.array(mergedFindingSchema),
    supersedes: z.uuid().nullable(),
  })
  .meta({
    id: 'ReviewManifest',
    description: 'One example per mode: do_and_judge, two_stage, debate, council.',
    examples: REVIEW_MANIFEST_EXAMPLES,
  }) satisfies z.ZodType<ReviewManifest>

export const reviewEnvelopeSchema = envelopeOf(reviewManifestSchema, 'ReviewManifestEnvelope')

export const reviewPendingSchema = z
  .object({ status: z.literal('pending'), missing_judges: z.array(z.string()) })
  .meta({ id: 'ReviewPending' }) satisfies z.ZodType<ReviewPending & { status: 'pending' }>
