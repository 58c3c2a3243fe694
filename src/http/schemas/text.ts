/** Text fields of request bodies, with the messages every schema gives for them. */
import { z } from 'zod'
import { identityProblem } from '../../domain/shared/agent-identity.ts'

/** An error message that says `required` when the key is absent and `otherwise` when its value is wrong. */
export const required = (otherwise: string) => (issue: { input: unknown }) =>
  issue.input === undefined ? 'required' : otherwise

/** True when the text says something: not empty after trimming. */
export const nonBlank = (text: string) => text.trim().length > 0

/** Text that must say something: non-empty after trimming, at most `max` characters. */
export function text(max: number) {
  return z
    .string({ error: required('must be a string') })
    .max(max, `at most ${max} characters`)
    .refine(nonBlank, 'must not be empty')
}

/**
 * A model name or context id: checked as an identity (NFKC-normalised, trimmed, then 1–200 printable ASCII
 * characters), so an invisible or look-alike character cannot make one model pass for another. The value is kept
 * as submitted; comparisons use its identity (src/domain/shared/agent-identity.ts).
 */
export const agentIdentityText = z
  .string({ error: required('must be a string') })
  .superRefine((value, ctx) => {
    const problem = identityProblem(value)
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem, input: value })
  })
  .meta({
    description:
      'Compared as an identity: NFKC-normalised and trimmed, it must be 1–200 printable ASCII characters (U+0021–U+007E); two are the same when equal after ASCII lower-casing. Kept and returned as submitted.',
  })
