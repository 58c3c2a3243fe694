import { once } from 'node:events'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { type AuditQuery, pageAuditRecords, streamAuditRecords } from '../../audit-log/reads.ts'
import { type CaseKindModule, sharedCaseSchemas } from '../case-kinds.ts'
import {
  authProblems,
  pageOf,
  pageQuery,
  positiveQueryInteger,
  queryIntegerAtMost,
  rfc3339,
} from '../schemas/common.ts'
import { verifyReportSchema } from '../schemas/log.ts'
import { pageText, sendJsonText } from '../send-json.ts'

const OPS = { auth: ['ops', 'admin'] as const }

export interface AuditRouteOptions {
  kinds: readonly CaseKindModule[]
}

/** The query of `GET /v1/audit/records`: each kind's id filter, then the filters every record has. */
function auditQueryOf(kinds: readonly CaseKindModule[]) {
  const { words } = sharedCaseSchemas(kinds)
  return z.strictObject({
    ...Object.fromEntries(kinds.map((m) => [m.idField, z.uuid().optional()])),
    subagent_id: z.string().min(1).optional(),
    orchestrator_id: z.string().min(1).optional(),
    kind: z.enum(words.auditKinds).optional(),
    verdict: z.enum(words.verdicts).optional(),
    from: rfc3339.optional(),
    to: rfc3339.optional(),
    ...pageQuery,
  }) as z.ZodType<{
    subagent_id?: string | undefined
    orchestrator_id?: string | undefined
    kind?: string | undefined
    verdict?: string | undefined
    from?: string | undefined
    to?: string | undefined
    limit: number
    cursor?: string | undefined
    [idField: string]: unknown
  }>
}

/** The records of the cases the query names by their kinds' id fields, as each kind finds its own. */
function caseRecordsQuery(kinds: readonly CaseKindModule[], query: Record<string, unknown>): AuditQuery {
  let merged: AuditQuery = {}
  for (const m of kinds) {
    const id = query[m.idField]
    if (typeof id !== 'string') continue
    const own = m.kind.auditQuery(id)
    merged = { ...merged, ...own, data: { ...merged.data, ...own.data } }
  }
  return merged
}

/** True when the Accept header asks for NDJSON with a non-zero quality. */
export function wantsNdjson(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((part) => {
    const [type, ...params] = part.split(';').map((p) => p.trim().toLowerCase())
    const q = params.find((p) => p.startsWith('q='))
    return type === 'application/x-ndjson' && (q === undefined || Number(q.slice(2)) > 0)
  })
}

export const auditRoutes: FastifyPluginAsyncZod<AuditRouteOptions> = async (app, options) => {
  const { auditRecord } = sharedCaseSchemas(options.kinds)
  const auditQuery = auditQueryOf(options.kinds)
  app.get(
    '/v1/audit/records',
    {
      config: OPS,
      schema: {
        tags: ['audit'],
        summary:
          'Audit records, ascending seq. With `Accept: application/x-ndjson`, every match is streamed, one record per line.',
        querystring: auditQuery,
        response: { 200: pageOf(auditRecord), ...authProblems },
      },
    },
    async (request, reply) => {
      const { limit, cursor, subagent_id, orchestrator_id, kind, verdict, from, to } = request.query
      const query = {
        ...caseRecordsQuery(options.kinds, request.query),
        subagentId: subagent_id,
        orchestratorId: orchestrator_id,
        kind,
        verdict,
        from: from ? new Date(from) : undefined,
        to: to ? new Date(to) : undefined,
      }
      // Both read your writes: every change committed before this request is in the log before it is read.
      if (!wantsNdjson(request.headers.accept))
        return sendJsonText(
          reply,
          200,
          pageText(await pageAuditRecords(app.services, query, { limit, cursor })),
        )
      const records = streamAuditRecords(app.services, query, { cursor })
      // The first batch is read before any header is sent, so a failing query is still a proper problem.
      let next = await records.next()
      reply.hijack()
      const raw = reply.raw
      raw.writeHead(200, {
        'content-type': 'application/x-ndjson; charset=utf-8',
        'x-request-id': request.id,
      })
      try {
        while (!next.done) {
          if (raw.destroyed) return
          // Respect backpressure: a slow reader slows the export down instead of filling memory; a reader that
          // goes away ends it ('close' comes instead of 'drain').
          if (!raw.write(`${next.value}\n`)) {
            await Promise.race([once(raw, 'drain'), once(raw, 'close')])
          }
          next = await records.next()
        }
      } catch (err) {
        request.log.error({ err }, 'audit export failed mid-stream')
        raw.destroy()
        return
      }
      raw.end()
    },
  )

  app.get(
    '/v1/audit/verify',
    {
      config: OPS,
      schema: {
        tags: ['audit'],
        summary:
          'Recompute the chain and the Merkle tree over a seq range and check every stored checkpoint in it; reports the first bad seq',
        querystring: z
          .strictObject({
            from_seq: positiveQueryInteger.optional(),
            to_seq: positiveQueryInteger.optional(),
          })
          .refine(
            (q) => q.from_seq === undefined || q.to_seq === undefined || q.from_seq <= q.to_seq,
            'from_seq must not exceed to_seq',
          ),
        response: { 200: verifyReportSchema, ...authProblems },
      },
    },
    // A seq past 2^53 - 1 lies beyond any log: read as that, the range is the same part of the log.
    async (request) => {
      const { from_seq, to_seq } = request.query
      return app.services.auditLog.verify({
        fromSeq: from_seq === undefined ? undefined : queryIntegerAtMost(from_seq),
        toSeq: to_seq === undefined ? undefined : queryIntegerAtMost(to_seq),
      })
    },
  )
}
