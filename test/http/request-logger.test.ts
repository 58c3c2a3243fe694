import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import type { FastifyBaseLogger } from 'fastify'
import pino, { symbols } from 'pino'
import { logsAt, RequestLogger } from '../../src/http/request-logger.ts'
import { loggerOptions } from '../../src/logger.ts'

/** A pino logger with the service's options writing into `lines`, its time fixed so two lines can be compared. */
function capturing(level: 'debug' | 'info' | 'warn') {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean))
      done()
    },
  })
  const logger = pino({ ...loggerOptions({ logLevel: level }), timestamp: () => ',"time":1' }, stream)
  return { logger, lines }
}

const BINDINGS = { reqId: 'r-1', clientRequestId: 'c-1' }

describe('request logger', () => {
  it('writes what a pino child with the same bindings writes, in every form a line takes', () => {
    const lazy = capturing('debug')
    const eager = capturing('debug')
    const lines: ((logger: FastifyBaseLogger) => void)[] = [
      (l) => l.info({ method: 'GET', status: 200 }, 'request'),
      (l) => l.warn('plain %s', 'text'),
      (l) => l.error({ err: new Error('boom'), key: 'arb_secret' }, 'failed'),
      (l) => l.error(new Error('bare error')),
      (l) => l.debug({ secret: 'x', headers: { authorization: 'Bearer k' } }, 'redacted'),
      (l) => l.trace('below the level'),
    ]
    for (const write of lines) {
      write(new RequestLogger(lazy.logger, BINDINGS))
      write(eager.logger.child(BINDINGS))
    }
    assert.equal(lazy.lines.length, 5)
    assert.deepEqual(
      lazy.lines.map((line) => line.replace(/"stack":"[^"]*"/, '')),
      eager.lines.map((line) => line.replace(/"stack":"[^"]*"/, '')),
    )
    assert.ok(!lazy.lines.join('\n').includes('arb_secret'), 'redaction holds')
  })

  it("writes the request's own line through the parent, as the child would, and makes no child below the level", () => {
    const lazy = capturing('info')
    const eager = capturing('info')
    const parent = lazy.logger
    let children = 0
    const counted = Object.assign(Object.create(parent), {
      child: (...args: Parameters<typeof parent.child>) => {
        children += 1
        return parent.child(...args)
      },
    }) as typeof parent
    const line = { method: 'POST', url: '/v1/outcomes', status: 201, durationMs: 1.5 }
    const quiet = new RequestLogger(counted, BINDINGS)
    quiet.debug({ dropped: true }, 'below info')
    assert.equal(logsAt(quiet, 'debug'), false)
    assert.equal(logsAt(quiet, 'info'), true)
    quiet.writeLine('info', line, 'request')
    new RequestLogger(counted, BINDINGS).writeLine('info', line, 'request')
    eager.logger.child(BINDINGS).info(line, 'request')
    eager.logger.child(BINDINGS).info(line, 'request')
    // The parent's unredacted twin, made once for every request's line; no request made a child of its own.
    assert.equal(children, 1, 'one child in all')
    assert.deepEqual(lazy.lines, eager.lines)
    // Once a line needs the child, it is made once and used from then on.
    quiet.warn('a warning')
    quiet.writeLine('info', line, 'request')
    eager.logger.child(BINDINGS).warn('a warning')
    eager.logger.child(BINDINGS).info(line, 'request')
    assert.equal(children, 2)
    assert.deepEqual(lazy.lines, eager.lines)
  })

  it("writes a line of plain values without running pino's redactor over it, and redacts every other line", () => {
    const lazy = capturing('debug')
    const eager = capturing('debug')
    // The service's wildcard paths (`*.key`) give the parent a redactor pino runs on every value of a line.
    const stringifiers = (
      lazy.logger as unknown as Record<symbol, Record<symbol, (...a: unknown[]) => unknown>>
    )[symbols.stringifiersSym]!
    const redactor = stringifiers[symbols.wildcardFirstSym]!
    let redactorRuns = 0
    stringifiers[symbols.wildcardFirstSym] = (...args: unknown[]) => {
      redactorRuns += 1
      return redactor(...args)
    }
    const request = new RequestLogger(lazy.logger, BINDINGS)
    const plain = { method: 'GET', url: '/v1/manifests/m-1', status: 200, durationMs: 1.5, cached: false }
    request.writeLine('info', plain, 'request')
    eager.logger.child(BINDINGS).info(plain, 'request')
    assert.equal(redactorRuns, 0, 'a line of plain values is written without the redactor')
    // The parent's level moves; the line follows it.
    lazy.logger.level = 'warn'
    eager.logger.level = 'warn'
    request.writeLine('info', plain, 'request')
    lazy.logger.level = 'debug'
    eager.logger.level = 'debug'
    request.writeLine('debug', plain, 'request')
    eager.logger.child(BINDINGS).debug(plain, 'request')
    assert.equal(lazy.lines.length, 2)
    // A value to look into, or a name a redact path starts with: the redacting parent writes it.
    const secretive: Record<string, unknown>[] = [
      { status: 500, err: Object.assign(new Error('boom'), { key: 'arb_secret_1' }) },
      { status: 200, key: 'arb_secret_2' },
      { status: 200, created: { secret: 'arb_secret_3' } },
    ]
    for (const line of secretive) {
      request.writeLine('error', line, 'request failed')
      eager.logger.child(BINDINGS).error(line, 'request failed')
    }
    assert.ok(redactorRuns > 0)
    const strip = (line: string) => line.replace(/"stack":"[^"]*"/, '')
    assert.deepEqual(lazy.lines.map(strip), eager.lines.map(strip))
    assert.ok(!lazy.lines.join('\n').includes('arb_secret'), 'redaction holds')
  })

  it('follows the level of its parent, and its own once set', () => {
    const { logger } = capturing('warn')
    const request = new RequestLogger(logger, BINDINGS)
    assert.equal(request.level, 'warn')
    logger.level = 'debug'
    assert.equal(logsAt(request, 'debug'), true)
    request.level = 'error'
    assert.equal(request.level, 'error')
    assert.equal(logger.level, 'debug', "the parent's level is the parent's")
    assert.equal(logsAt(request, 'warn'), false)
    assert.equal(logsAt(new RequestLogger(pino({ level: 'silent' }), BINDINGS), 'fatal'), false)
    const custom = pino({ level: 'audit', customLevels: { audit: 35 } })
    assert.equal(
      logsAt(new RequestLogger(custom, BINDINGS), 'warn'),
      true,
      'a level pino does not name leaves the decision to the logger',
    )
  })
})
