import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { buildJwks } from '../../crypto/jwks.ts'
import { AppError } from '../../errors.ts'
import { ManifestFeed } from '../../services/manifest-feed.ts'
import { envelopeFromRow, envelopeText, findManifestRow, listManifestRows } from '../../services/manifests.ts'
import { listSigningKeys } from '../../services/signing.ts'
import { problemSchema } from '../errors.ts'
import { decodeCursor, pageOf, pageQuery, toPage } from '../pagination.ts'
import { directiveSchema, envelopeSchema, verdictSchema } from '../schemas/arbitration.ts'
import { authProblems, idParams, rfc3339 } from '../schemas/common.ts'

const READERS = ['orchestrator', 'dashboard', 'ops', 'admin'] as const
const seqCursor = z.object({ seq: z.number().int().nonnegative() })

export interface ManifestRouteOptions {
  ssePollMs: number
  sseHeartbeatMs: number
}

export const manifestRoutes: FastifyPluginAsyncZod<ManifestRouteOptions> = async (app, options) => {
  const feed = new ManifestFeed(app.db, {
    pollMs: options.ssePollMs,
    heartbeatMs: options.sseHeartbeatMs,
    stallLimitMs: 60_000,
    onError: (err) => app.log.warn({ err }, 'manifest stream poll failed'),
  })
  // Manifests placed by this process's sequencer are streamed at once rather than at the next poll.
  const stopWaking = app.services.auditLog.sequencer.onBatch(() => feed.poke())
  // Open streams would keep close() waiting forever: end them first.
  app.addHook('preClose', async () => {
    stopWaking()
    feed.close()
  })

  app.get(
    '/.well-known/jwks.json',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['manifests'],
        summary: 'Public keys (RFC 8037 OKP) of every key that ever signed a manifest',
        response: {
          200: z.object({
            keys: z.array(
              z.object({
                kty: z.string(),
                crv: z.string(),
                x: z.string(),
                kid: z.string(),
                alg: z.string(),
                use: z.string(),
              }),
            ),
          }),
        },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300')
      return buildJwks(await listSigningKeys(app.db))
    },
  )

  app.get(
    '/v1/manifests',
    {
      config: { auth: READERS },
      schema: {
        tags: ['manifests'],
        summary: 'List manifest envelopes in log order (by audit_seq)',
        querystring: z.strictObject({
          subagent_id: z.string().min(1).optional(),
          outcome_id: z.uuid().optional(),
          verdict: verdictSchema.optional(),
          directive: directiveSchema.optional(),
          since: rfc3339.optional().describe('RFC 3339 time of issue'),
          ...pageQuery,
        }),
        response: { 200: pageOf(envelopeSchema), ...authProblems },
      },
    },
    async (request) => {
      const { limit, cursor, subagent_id, outcome_id, verdict, directive, since } = request.query
      const after = decodeCursor(cursor, seqCursor)
      // Listed in log order, so every manifest committed before this request is placed first.
      await app.services.auditLog.catchUp()
      const rows = await listManifestRows(
        app.db,
        {
          subagentId: subagent_id,
          outcomeId: outcome_id,
          verdict,
          directive,
          since: since ? new Date(since) : undefined,
          afterSeq: after?.seq ?? null,
        },
        limit + 1,
      )
      return toPage(rows, limit, envelopeFromRow, (row) => ({ seq: row.audit_seq }))
    },
  )

  app.get(
    '/v1/manifests/stream',
    {
      config: { auth: READERS },
      schema: {
        tags: ['manifests'],
        summary:
          'Server-Sent Events: `event: manifest`, `id:` audit_seq, `data:` the envelope. Send Last-Event-ID to resume.',
        headers: z.object({ 'last-event-id': z.string().optional() }),
      },
    },
    async (request, reply) => {
      const header = request.headers['last-event-id']
      let lastEventId: number | null = null
      if (header !== undefined) {
        if (!/^\d{1,15}$/.test(header))
          throw new AppError('VALIDATION', 'Last-Event-ID must be a manifest audit_seq')
        lastEventId = Number(header)
      }
      // "Sequenced after the stream opened" means after every change committed before it.
      await app.services.auditLog.catchUp()
      reply.hijack()
      reply.raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
      })
      reply.raw.write('retry: 2000\n: connected\n\n')
      try {
        await feed.subscribe(reply.raw, lastEventId)
      } catch (err) {
        request.log.warn({ err }, 'manifest stream could not start')
        reply.raw.end()
      }
    },
  )

  app.get(
    '/v1/manifests/:id',
    {
      config: { auth: READERS },
      schema: {
        tags: ['manifests'],
        summary: 'One signed manifest envelope',
        params: idParams,
        response: { 200: envelopeSchema, 404: problemSchema, ...authProblems },
      },
    },
    async (request, reply) => {
      const row = await findManifestRow(app.db, request.params.id)
      if (!row) throw new AppError('NOT_FOUND', `no manifest ${request.params.id}`)
      // The stored canonical text is the signed payload itself: send it as is rather than parse and re-serialize.
      return reply
        .type('application/json; charset=utf-8')
        .serializer((text: unknown) => text as string)
        .send(envelopeText(row) as never)
    },
  )
}
