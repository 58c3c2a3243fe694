import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { assertAcceptableJson } from '../../json-guard.ts'

/**
 * JSON is the only body type: anything else is a 415, not a confusing validation error. An empty body with a
 * JSON content type means "no body" (e.g. `POST …/evaluate`). Every parsed body passes the I-JSON guard before a
 * route sees it.
 */
async function jsonBodyPlugin(app: FastifyInstance) {
  app.removeAllContentTypeParsers()
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.addContentTypeParser(
    ['application/json', 'application/problem+json'],
    { parseAs: 'string' },
    (request, body, done) => {
      if (body === '') return done(null, undefined)
      parseJson(request, body as string, (err, parsed) => {
        if (err) return done(err)
        try {
          assertAcceptableJson(parsed)
        } catch (guardErr) {
          return done(guardErr as Error)
        }
        done(null, parsed)
      })
    },
  )
}

export default fp(jsonBodyPlugin, { name: 'arbiter-json-body' })
