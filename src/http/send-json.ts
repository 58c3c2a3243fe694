import type { FastifyReply } from 'fastify'
import type { Page } from '../pagination.ts'

/**
 * Sends JSON text built from stored canonical manifests, bypassing the route's response serializer: a signed
 * manifest is served byte for byte as signed, never parsed and re-serialized (which could drop or reorder what
 * the signature covers). The route's response schema still documents the shape.
 */
export function sendJsonText(reply: FastifyReply, statusCode: number, text: string): FastifyReply {
  return reply
    .code(statusCode)
    .type('application/json; charset=utf-8')
    .serializer((payload: unknown) => payload as string)
    .send(text as never)
}

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
