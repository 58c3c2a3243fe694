/**
 * The status report workers (fan-out results) and judges (review verdicts) return in. One of four
 * statuses, each with the keys it requires, so the caller routes on a field instead of reading prose:
 *
 * | status               | requires                  | also allows            |
 * |----------------------|---------------------------|------------------------|
 * | `DONE`               | `evidence`                | the evidence members   |
 * | `DONE_WITH_CONCERNS` | `evidence`, `concerns`    | the evidence members   |
 * | `NEEDS_CONTEXT`      | `blocking_question`       |                        |
 * | `BLOCKED`            | `blocking_reason`         |                        |
 *
 * plus `status` and `summary` always. A key that belongs to another status is refused even when null
 * (a `BLOCKED` return with `evidence: null` is a malformed return, not a blocked one), and so is any
 * key the report does not name. Each use adds its own members: some on every status (a fan-out's
 * `subtask_id`, a review's `judge_id`), some only beside evidence (a fan-out's `claims`).
 *
 * Nothing here transforms the body: what validates is exactly what was submitted, so a digest of
 * the parsed body is a digest of the body as submitted.
 */
import { z } from 'zod'
import { REPORT_STATUSES, type ReportStatus } from '../../domain/status-report.ts'
import { freeJson } from './common.ts'
import { nonBlank } from './text.ts'

/** Longest `summary`, `blocking_question`, `blocking_reason` and single concern, in characters. */
export const REPORT_TEXT_MAX = 4000
/** Most concerns one return may list. */
export const REPORT_CONCERNS_MAX = 50

const STATUS_LIST = REPORT_STATUSES.join(', ')

/**
 * Non-empty (after trimming) text of at most {@link REPORT_TEXT_MAX} characters; `whenMissing` is
 * the message for an absent key, so a client learns which status made it required.
 */
function reportText(whenMissing: string) {
  return z
    .string({ error: (issue) => (issue.input === undefined ? whenMissing : 'must be a string') })
    .max(REPORT_TEXT_MAX, `at most ${REPORT_TEXT_MAX} characters`)
    .refine(nonBlank, 'must not be empty')
}

const requiredFor = (status: ReportStatus) => `required when status is ${status}`

const evidenceSchema = (status: ReportStatus) =>
  z
    .array(freeJson, {
      error: (issue) => (issue.input === undefined ? requiredFor(status) : 'must be an array'),
    })
    .min(1, 'at least one evidence item')

const concernsSchema = z
  .array(reportText('required'), {
    error: (issue) => (issue.input === undefined ? requiredFor('DONE_WITH_CONCERNS') : 'must be an array'),
  })
  .min(1, 'at least one concern')
  .max(REPORT_CONCERNS_MAX, `at most ${REPORT_CONCERNS_MAX} concerns`)

/** A key of another status: present at all, even as null, is an error at that key. */
function refusedKey(allowedWith: string) {
  return z.never({ error: `allowed only when status is ${allowedWith}` }).optional()
}

type RefusedKeys<Shape extends z.ZodRawShape> = { [K in keyof Shape]: ReturnType<typeof refusedKey> }

function refuseAll<Shape extends z.ZodRawShape>(shape: Shape, allowedWith: string): RefusedKeys<Shape> {
  return Object.fromEntries(
    Object.keys(shape).map((key) => [key, refusedKey(allowedWith)]),
  ) as RefusedKeys<Shape>
}

export interface StatusReportMembers<Every extends z.ZodRawShape, WithEvidence extends z.ZodRawShape> {
  /** Members allowed on every status (and required or not as their schemas say). */
  every: Every
  /** Members allowed only beside evidence (DONE, DONE_WITH_CONCERNS); refused on the others, even when null. */
  withEvidence: WithEvidence
}

/**
 * The status report as a zod schema, a union discriminated by `status`, with the use's own members added.
 * Errors point at the offending key (`/blocking_reason`, `/claims/0/sources/0/uri`); an unknown or
 * missing `status` is one error at `/status`, since the other keys cannot be judged without it.
 */
export function statusReportSchema<Every extends z.ZodRawShape, WithEvidence extends z.ZodRawShape>(
  members: StatusReportMembers<Every, WithEvidence>,
) {
  const summary = reportText('required')
  const withEvidenceOnly = 'DONE or DONE_WITH_CONCERNS'
  const refusedWithoutEvidence = refuseAll(members.withEvidence, withEvidenceOnly)

  const done = z.strictObject({
    status: z.literal('DONE'),
    summary,
    evidence: evidenceSchema('DONE'),
    ...members.withEvidence,
    concerns: refusedKey('DONE_WITH_CONCERNS'),
    blocking_question: refusedKey('NEEDS_CONTEXT'),
    blocking_reason: refusedKey('BLOCKED'),
    ...members.every,
  })
  const doneWithConcerns = z.strictObject({
    status: z.literal('DONE_WITH_CONCERNS'),
    summary,
    evidence: evidenceSchema('DONE_WITH_CONCERNS'),
    concerns: concernsSchema,
    ...members.withEvidence,
    blocking_question: refusedKey('NEEDS_CONTEXT'),
    blocking_reason: refusedKey('BLOCKED'),
    ...members.every,
  })
  // NEEDS_CONTEXT and BLOCKED: the one text each requires; evidence, concerns and the other's text refused.
  const withoutEvidence = <Status extends string, Own extends z.ZodRawShape, Other extends z.ZodRawShape>(
    status: Status,
    own: Own,
    other: Other,
  ) =>
    z.strictObject({
      status: z.literal(status),
      summary,
      ...own,
      evidence: refusedKey(withEvidenceOnly),
      concerns: refusedKey('DONE_WITH_CONCERNS'),
      ...other,
      ...refusedWithoutEvidence,
      ...members.every,
    })
  const needsContext = withoutEvidence(
    'NEEDS_CONTEXT',
    { blocking_question: reportText(requiredFor('NEEDS_CONTEXT')) },
    { blocking_reason: refusedKey('BLOCKED') },
  )
  const blocked = withoutEvidence(
    'BLOCKED',
    { blocking_reason: reportText(requiredFor('BLOCKED')) },
    { blocking_question: refusedKey('NEEDS_CONTEXT') },
  )

  return z.discriminatedUnion('status', [done, doneWithConcerns, needsContext, blocked], {
    error: (issue) => {
      if (issue.code !== 'invalid_union') return undefined
      const status = (issue.input as { status?: unknown } | undefined)?.status
      return status === undefined ? `required: one of ${STATUS_LIST}` : `must be one of ${STATUS_LIST}`
    },
  })
}
