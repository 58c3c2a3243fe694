import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { AppError } from '../../errors.ts'
import { type CaseKindModule, sharedCaseSchemas } from '../case-kinds.ts'
import { problemSchema } from '../errors.ts'
import { authProblems, idParams, positiveQueryInteger } from '../schemas/common.ts'
import { consistencyProofSchema, inclusionProofSchema, signedCheckpointSchema } from '../schemas/log.ts'

/** Checkpoints and proofs answer every role: they are how anyone checks the log without trusting Arbiter. */
const EVERY_ROLE = { auth: ['orchestrator', 'dashboard', 'ops', 'admin'] as const }

/** True when the Accept header prefers the note as text over JSON. */
export function wantsNoteText(accept: string | undefined): boolean {
  let text = 0
  let json = 0
  for (const part of (accept ?? '').split(',')) {
    const [type, ...params] = part.split(';').map((p) => p.trim().toLowerCase())
    const qParam = params.find((p) => p.startsWith('q='))
    const q = qParam === undefined ? 1 : Number(qParam.slice(2))
    if (!(q > 0)) continue
    if (type === 'text/plain') text = Math.max(text, q)
    else if (type === 'application/json' || type === 'application/*' || type === '*/*')
      json = Math.max(json, q)
  }
  return text > 0 && text >= json
}

export const logRoutes: FastifyPluginAsyncZod<{ kinds: readonly CaseKindModule[] }> = async (
  app,
  options,
) => {
  const auditRecordSchema = sharedCaseSchemas(options.kinds).auditRecord
  const log = app.services.auditLog

  app.get(
    '/v1/audit/checkpoint',
    {
      config: EVERY_ROLE,
      schema: {
        tags: ['audit'],
        summary:
          'A signed checkpoint covering every change committed before the request (signed now if the latest does not). With `Accept: text/plain`, the signed note alone.',
        response: { 200: signedCheckpointSchema, ...authProblems },
      },
    },
    async (request, reply) => {
      const signed = await log.checkpoint()
      if (wantsNoteText(request.headers.accept)) {
        return reply
          .type('text/plain; charset=utf-8')
          .serializer((text: unknown) => text as string)
          .send(signed.note as never)
      }
      return signed
    },
  )

  app.get(
    '/v1/audit/proofs/inclusion',
    {
      config: EVERY_ROLE,
      schema: {
        tags: ['audit'],
        summary:
          'RFC 9162 inclusion proof of record `seq`; without `tree_size`, against a signed checkpoint covering every change committed before the request',
        querystring: z.strictObject({
          seq: positiveQueryInteger,
          tree_size: positiveQueryInteger.optional(),
        }),
        response: { 200: inclusionProofSchema, 404: problemSchema, ...authProblems },
      },
    },
    async (request) => {
      const { seq, tree_size } = request.query
      // The tree's size is judged first, as the log does: a proof needs a tree before it needs a leaf in it.
      const treeSize = tree_size === undefined ? undefined : logPosition('tree_size', tree_size)
      return log.inclusion(logPosition('seq', seq), treeSize)
    },
  )

  app.get(
    '/v1/audit/proofs/consistency',
    {
      config: EVERY_ROLE,
      schema: {
        tags: ['audit'],
        summary: 'RFC 9162 consistency proof between two tree sizes ([] when they are equal)',
        querystring: z
          .strictObject({ from_size: positiveQueryInteger, to_size: positiveQueryInteger })
          .refine((q) => q.from_size <= q.to_size, 'from_size must not exceed to_size'),
        response: { 200: consistencyProofSchema, 404: problemSchema, ...authProblems },
      },
    },
    async (request) => {
      // to_size first, as the log judges it: from_size is no larger (the schema saw to that).
      const toSize = logPosition('to_size', request.query.to_size)
      return log.consistency(logPosition('from_size', request.query.from_size), toSize)
    },
  )

  app.get(
    '/v1/manifests/:id/inclusion',
    {
      config: EVERY_ROLE,
      schema: {
        tags: ['manifests'],
        summary:
          "Proof that a manifest was logged: its manifest.issued record and that record's inclusion proof against a signed checkpoint",
        params: idParams,
        response: {
          200: z
            .object({
              manifest_id: z.uuid(),
              record: auditRecordSchema,
              leaf_index: z.number().int(),
              tree_size: z.number().int(),
              leaf_hash: z.string(),
              proof: z.array(z.string()),
              checkpoint: signedCheckpointSchema,
            })
            .meta({ id: 'ManifestInclusion' }),
          404: problemSchema,
          ...authProblems,
        },
      },
    },
    async (request) => log.manifestInclusion(request.params.id),
  )
}

/**
 * A seq or tree size as the log reads it. A log holds fewer than 2^53 records, so a larger value (which a number
 * could not even hold exactly) is beyond it: a 404 naming the value as the client sent it.
 */
function logPosition(name: string, value: bigint): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new AppError('NOT_FOUND', `${name} ${value} is beyond the log`)
  }
  return Number(value)
}
