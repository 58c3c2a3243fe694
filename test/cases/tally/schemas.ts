import { z } from 'zod'
import { envelopeOf } from '../../../src/http/schemas/envelope.ts'
import { TALLY_DIRECTIVES, TALLY_STATUSES, TALLY_VERDICTS } from './kind.ts'

export const tallyStatusSchema = z.enum(TALLY_STATUSES)

export const tallyManifestSchema = z
  .object({
    kind: z.literal('tally'),
    manifest_id: z.uuid(),
    issued_at: z.string(),
    supersedes: z.uuid().nullable(),
    tally_id: z.uuid(),
    verdict: z.enum(TALLY_VERDICTS),
    directive: z.enum(TALLY_DIRECTIVES),
    votes: z.array(z.string()),
    winner: z.string().nullable(),
  })
  .meta({ id: 'TallyManifest' })

export const tallyEnvelopeSchema = envelopeOf(tallyManifestSchema, 'TallyManifestEnvelope')

export const tallySchema = z.object({ tally_id: z.uuid(), status: tallyStatusSchema })
export const voteBody = z.strictObject({ voter: z.string().min(1), choice: z.string().min(1) })
export const voteSchema = z.object({ tally_id: z.uuid(), voter: z.string(), choice: z.string() })
export const tallyResolutionBody = z.strictObject({ winner: z.string().min(1) })
