/** Text fields of request bodies, with the messages every schema gives for them. */
import { z } from 'zod'

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
