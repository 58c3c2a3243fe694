import type { FastifyReply } from 'fastify'
import { utf8OfPieces } from '../domain/shared/utf8-pieces.ts'
import { envelopePieces, envelopeText, type StoredEnvelope } from '../engine/manifests.ts'
import type { Page } from '../pagination.ts'

/**
 * Sends JSON text built from stored canonical manifests, bypassing the route's response serializer: a signed
 * manifest is served byte for byte as signed, never parsed and re-serialized (which could drop or reorder what
 * the signature covers). The route's response schema still documents the shape.
 */
export function sendJsonText(reply: FastifyReply, statusCode: number, text: string): FastifyReply {
  // A large text is encoded once, here: sent as a string, it would be measured for Content-Length in one pass
  // over its megabytes and encoded for the socket in another, both on the event loop.
  if (text.length >= BUFFERED_TEXT_LENGTH) return sendJsonBytes(reply, statusCode, Buffer.from(text))
  reply.code(statusCode).type('application/json; charset=utf-8')
  return reply.serializer((payload: unknown) => payload as string).send(text as never)
}

/** Sends JSON already encoded (see sendJsonText). */
export function sendJsonBytes(reply: FastifyReply, statusCode: number, bytes: Buffer): FastifyReply {
  return reply.code(statusCode).type('application/json; charset=utf-8').send(bytes)
}

/** Sends JSON text given in pieces (large ones among them: stored manifests and their JWS) as its bytes. */
function sendJsonPieces(reply: FastifyReply, statusCode: number, pieces: readonly string[]): FastifyReply {
  let length = 0
  for (const piece of pieces) length += piece.length
  if (length < BUFFERED_TEXT_LENGTH) return sendJsonText(reply, statusCode, pieces.join(''))
  return sendJsonBytes(reply, statusCode, utf8OfPieces(pieces))
}

/** A page `{items, next_cursor}` of stored envelopes, each manifest byte for byte as signed. */
export function sendEnvelopePage(
  reply: FastifyReply,
  statusCode: number,
  page: Page<StoredEnvelope>,
): FastifyReply {
  const pieces = ['{"items":[']
  page.items.forEach((envelope, i) => {
    if (i > 0) pieces.push(',')
    pieces.push(...envelopePieces(envelope))
  })
  pieces.push(`],"next_cursor":${JSON.stringify(page.next_cursor)}}`)
  return sendJsonPieces(reply, statusCode, pieces)
}

/** Texts at least this long are sent as their UTF-8 bytes. */
const BUFFERED_TEXT_LENGTH = 64 * 1024

/** A page `{items, next_cursor}` whose items are JSON text already. */
export function pageText(page: Page<string>): string {
  return `{"items":[${page.items.join(',')}],"next_cursor":${JSON.stringify(page.next_cursor)}}`
}

/** A JSON object whose member values are JSON text already (e.g. a stored envelope among other fields). */
export function objectText(members: Record<string, string>): string {
  return `{${Object.entries(members)
    .map(([name, text]) => `${JSON.stringify(name)}:${text}`)
    .join(',')}}`
}

/** A signed envelope as stored: its manifest byte for byte as signed. */
export function sendEnvelope(
  reply: FastifyReply,
  statusCode: number,
  envelope: StoredEnvelope,
): FastifyReply {
  return sendJsonPieces(reply, statusCode, envelopePieces(envelope))
}

/**
 * A case's story as the audit routes answer it: `{<idField>, status, records, manifest}`, the records as JSON text
 * (see `AuditRecordText`), the envelope as stored.
 */
export function sendCaseStory(
  reply: FastifyReply,
  idField: string,
  story: { id: string; status: string; records: string[]; manifest: StoredEnvelope | null },
): FastifyReply {
  return sendJsonText(
    reply,
    200,
    objectText({
      [idField]: JSON.stringify(story.id),
      status: JSON.stringify(story.status),
      records: `[${story.records.join(',')}]`,
      manifest: story.manifest ? envelopeText(story.manifest) : 'null',
    }),
  )
}
