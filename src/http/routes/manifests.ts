import type { FastifyInstance } from 'fastify'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { ManifestFeed, STREAM_RETRY_AFTER_SECONDS, type StreamTicket } from '../../engine/manifest-feed.ts'
import { getManifest, pageManifests } from '../../engine/manifests.ts'
import { AppError } from '../../errors.ts'
import { publishedJwks } from '../../services/signing-keys.ts'
import { type CaseKindModule, casesNamed, sharedCaseSchemas, sharedExamples } from '../case-kinds.ts'
import { problemSchema } from '../errors.ts'
import { principalOf } from '../plugins/app/auth.ts'
import { authProblems, idParams, pageOf, pageQuery, rfc3339 } from '../schemas/common.ts'
import { envelopeOf } from '../schemas/envelope.ts'
import { sendEnvelope, sendEnvelopePage } from '../send-json.ts'

const READERS = ['orchestrator', 'dashboard', 'ops', 'admin'] as const

/** One event of the manifest stream as it arrives (the envelope shortened). */
const STREAM_EXAMPLE =
  'event: manifest\nid: 42\ndata: {"manifest":{"kind":"outcome","manifest_id":"…"},"signature":"…"}\n\n'

export interface ManifestRouteOptions {
  /** The case kinds whose manifests the feed holds (its filters and documentation). */
  kinds: readonly CaseKindModule[]
  ssePollMs: number
  sseHeartbeatMs: number
  /** Open streams on this replica before 503 (1,000 in production; tests lower it). */
  sseMaxStreams: number
}

/** Open streams per API key before 429. */
const MAX_STREAMS_PER_KEY = 16

const builtEnvelopes = new Map<string, ReturnType<typeof envelopeOf>>()

/**
 * The envelope of a manifest of any of these kinds, as the manifest routes answer it (and webhook events carry
 * it): built once per list of kinds, its component being registered by id.
 */
export function manifestEnvelopeOf(kinds: readonly CaseKindModule[]): ReturnType<typeof envelopeOf> {
  const key = kinds.map((m) => m.kind.name).join(',')
  let envelope = builtEnvelopes.get(key)
  if (envelope === undefined) {
    envelope = envelopeOf(
      sharedCaseSchemas(kinds).manifest,
      'ManifestEnvelope',
      sharedExamples(kinds, (e) => e.envelope),
    )
    builtEnvelopes.set(key, envelope)
  }
  return envelope
}

/**
 * The feed the manifest streams of this app read: counted in its metrics, woken by this process's sequencer, told
 * of revoked keys, and ended before the app closes.
 */
function manifestStreamFeed(app: FastifyInstance, options: ManifestRouteOptions): ManifestFeed {
  const feed = new ManifestFeed(app.services, {
    pollMs: options.ssePollMs,
    heartbeatMs: options.sseHeartbeatMs,
    stallLimitMs: 60_000,
    maxStreamsPerKey: MAX_STREAMS_PER_KEY,
    maxStreams: options.sseMaxStreams,
    onError: (err) => app.log.warn({ err }, 'manifest stream poll failed'),
    onPageRead: () => app.services.metrics.streamPagesRead.inc(),
  })
  app.services.metrics.streamsOpen.source = () => feed.size
  // Manifests placed by this process's sequencer are streamed at once rather than at the next poll.
  const stopWaking = app.services.auditLog.sequencer.onBatch(() => feed.poke())
  // A revoked key's streams close as soon as this replica hears of the revocation, wherever it was made.
  const stopHearing = app.services.keyCache?.onRevoked((keyId) => feed.keyRevoked(keyId))
  // Open streams would keep close() waiting forever: end them first.
  app.addHook('preClose', async () => {
    stopWaking()
    stopHearing?.()
    feed.close()
  })
  return feed
}

/** The one feed of signed manifests, every case kind in log order, and the keys that verify them. */
export const manifestRoutes: FastifyPluginAsyncZod<ManifestRouteOptions> = async (app, options) => {
  const { words } = sharedCaseSchemas(options.kinds)
  const envelopeSchema = manifestEnvelopeOf(options.kinds)
  const feed = manifestStreamFeed(app, options)

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
      return publishedJwks(app.services)
    },
  )

  app.get(
    '/v1/manifests',
    {
      config: { auth: READERS },
      schema: {
        tags: ['manifests'],
        summary: 'List manifest envelopes of every kind, in log order',
        querystring: z.strictObject({
          kind: z.enum(words.manifestKinds).optional(),
          subagent_id: z.string().min(1).optional(),
          ...Object.fromEntries(options.kinds.map((m) => [m.idField, z.uuid().optional()])),
          verdict: z.enum(words.verdicts).optional(),
          directive: z.enum(words.directives).optional(),
          since: rfc3339.optional().describe('RFC 3339 time of issue'),
          ...pageQuery,
        }) as z.ZodType<{
          kind?: string | undefined
          subagent_id?: string | undefined
          verdict?: string | undefined
          directive?: string | undefined
          since?: string | undefined
          limit: number
          cursor?: string | undefined
          [idField: string]: unknown
        }>,
        response: { 200: pageOf(envelopeSchema), ...authProblems },
      },
    },
    async (request, reply) => {
      const { limit, cursor, kind, subagent_id, verdict, directive, since } = request.query
      const cases = casesNamed(options.kinds, request.query)
      const page = await pageManifests(
        app.services,
        {
          kind,
          cases,
          subagentId: subagent_id,
          verdict,
          directive,
          since: since ? new Date(since) : undefined,
        },
        { limit, cursor },
      )
      return sendEnvelopePage(reply, 200, page)
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
        description:
          'Without `Last-Event-ID` only manifests sequenced after the stream opened are sent; with it, every ' +
          'manifest after that seq first, read a page at a time. Each key may hold 16 open streams on each replica ' +
          `(one more → 429 + Retry-After) and each replica 1,000 in all (→ 503 + Retry-After). A key's streams end ` +
          'within a second of its revocation, on every replica.',
        headers: z.object({ 'last-event-id': z.string().optional() }),
        response: {
          200: {
            description:
              'An endless event stream: one `manifest` event per signed manifest, comment lines as heartbeats',
            content: {
              'text/event-stream': {
                schema: z
                  .string()
                  .meta({ examples: [STREAM_EXAMPLE] })
                  .describe('`event: manifest`, `id: <audit_seq>`, `data: <the manifest envelope>`'),
              },
            },
          },
          ...authProblems,
          429: {
            description:
              'This key holds 16 open streams already (or too many unknown keys came from this address): retry ' +
              'after Retry-After seconds',
            content: { 'application/problem+json': { schema: problemSchema } },
          },
          503: {
            description:
              'This replica serves its maximum of open streams, or is overloaded: retry after Retry-After',
            content: { 'application/problem+json': { schema: problemSchema } },
          },
        },
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
      // The stream's slot is taken before anything is awaited, so concurrent opens cannot pass the bounds.
      let ticket: StreamTicket
      try {
        ticket = feed.admit(principalOf(request).keyId)
      } catch (err) {
        reply.header('retry-after', String(STREAM_RETRY_AFTER_SECONDS))
        throw err
      }
      // Also when the client leaves while the stream is being opened.
      reply.raw.once('close', ticket.release)
      try {
        // "Sequenced after the stream opened" means after every change committed before it. Best effort: a
        // stream holds no admission slot, so it must not be refused while the log catches up either.
        await app.services.auditLog.catchUp().catch(() => {})
        reply.hijack()
        reply.raw.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache, no-transform',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
          'x-request-id': request.id,
        })
        reply.raw.write('retry: 2000\n: connected\n\n')
      } catch (err) {
        ticket.release()
        throw err
      }
      try {
        await ticket.open(reply.raw, lastEventId)
      } catch (err) {
        request.log.warn({ err }, 'manifest stream could not start')
        ticket.release()
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
    async (request, reply) => sendEnvelope(reply, 200, await getManifest(app.services, request.params.id)),
  )
}
