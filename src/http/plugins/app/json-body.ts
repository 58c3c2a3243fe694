import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type JsonValue, rememberCanonicalParts } from '../../../domain/shared/canonical-json.ts'
import { type JsonBodyReading, readJsonBody } from '../../../domain/shared/i-json.ts'
import { AppError } from '../../../errors.ts'
import { takeTurn } from '../../../event-loop-turns.ts'
import { JsonBodyWorkers, type WorkerReading } from '../../json-body-pool.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The worker threads that read large request bodies. */
    jsonBodyWorkers: JsonBodyWorkers
  }
}

/** Bodies from this size on are read in a worker thread; smaller ones cost less than the trip there. */
export const WORKER_BODY_BYTES = 64 * 1024

/**
 * JSON is the only body type: anything else is a 415, not a confusing validation error. An empty body with a
 * JSON content type means "no body" (e.g. `POST …/evaluate`). Every body is I-JSON, read from its bytes
 * (src/domain/shared/i-json.ts): a charset other than UTF-8, invalid UTF-8, duplicate member names, inexact
 * integers and numbers beyond a double are a 400 naming where, before a route sees the body. Large bodies are
 * read in a worker thread, which also canonicalizes their large parts (src/http/json-body-pool.ts).
 */
async function jsonBodyPlugin(app: FastifyInstance) {
  const workers = new JsonBodyWorkers()
  app.decorate('jsonBodyWorkers', workers)
  app.addHook('onClose', () => workers.close())

  // A large body's validation, and the route's work on it up to its first query, take a turn of their own.
  const largeBodies = new WeakSet<object>()
  app.addHook('preValidation', async (request) => {
    if (largeBodies.has(request)) await takeTurn()
  })

  app.removeAllContentTypeParsers()
  app.addContentTypeParser(
    ['application/json', 'application/problem+json'],
    { parseAs: 'buffer' },
    (request, body, done) => {
      const bytes = body as Buffer
      const charset = unacceptableCharset(request.headers['content-type'])
      if (charset !== null) return done(charsetError(charset))
      if (bytes.length === 0) return done(null, undefined)
      if (bytes.length < WORKER_BODY_BYTES) return settle(done, () => bodyValue(readJsonBody(bytes)))
      largeBodies.add(request)
      workers.read(bytes).then(
        // Parsing the text again and validating it come next on this thread: they take their turn
        // (src/event-loop-turns.ts), so that a burst of large bodies does not hold the loop for their sum.
        (reading) => takeTurn().then(() => settle(done, () => valueOfWorkerReading(reading))),
        (err: Error) => {
          request.log.warn({ err }, 'a body worker failed; reading the body on the main thread')
          settle(done, () => bodyValue(readJsonBody(bytes)))
        },
      )
    },
  )
}

type Done = (err: Error | null, body?: unknown) => void

function settle(done: Done, read: () => JsonValue): void {
  let value: JsonValue
  try {
    value = read()
  } catch (err) {
    done(err as Error, undefined)
    return
  }
  done(null, value)
}

function bodyValue(reading: JsonBodyReading): JsonValue {
  if (!reading.ok) throw readingError(reading)
  return reading.value
}

/** The worker checked the text; parsing it again here is native and quick, and its large parts are known. */
function valueOfWorkerReading(reading: WorkerReading): JsonValue {
  if (!reading.ok) throw readingError(reading)
  const value = JSON.parse(reading.text) as JsonValue
  rememberCanonicalParts(value, reading.parts)
  return value
}

function readingError(reading: Extract<JsonBodyReading, { ok: false }>): AppError {
  if (reading.reason === 'malformed-json') return new AppError('MALFORMED_JSON', reading.message)
  const path = `body${reading.pointer ?? ''}`
  return new AppError('VALIDATION', `${path}: ${reading.message}`, {}, [{ path, message: reading.message }])
}

/**
 * The `charset` parameter of a content type when it names anything but UTF-8 (`utf-8` or `utf8`, any case,
 * quoted or not), else null: bodies are read as UTF-8 only, so a body in another charset is refused rather
 * than misread.
 */
export function unacceptableCharset(contentType: string | undefined): string | null {
  if (!contentType) return null
  for (const parameter of contentType.split(';').slice(1)) {
    const equals = parameter.indexOf('=')
    if (equals === -1 || parameter.slice(0, equals).trim().toLowerCase() !== 'charset') continue
    let value = parameter.slice(equals + 1).trim()
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1)
    const name = value.toLowerCase()
    if (name !== 'utf-8' && name !== 'utf8') return value
  }
  return null
}

function charsetError(charset: string): AppError {
  const shown = JSON.stringify(charset.length > 40 ? `${charset.slice(0, 40)}…` : charset)
  const message = `charset ${shown} is not accepted: bodies are UTF-8 (send charset=utf-8, or no charset)`
  return new AppError('VALIDATION', `headers/content-type: ${message}`, {}, [
    { path: 'headers/content-type', message },
  ])
}

export default fp(jsonBodyPlugin, { name: 'arbiter-json-body' })
