import type { LoggerOptions } from 'pino'
import type { Config } from './config.ts'
import { traceLogFields } from './tracing/spans.ts'

/** Log paths that may hold a secret: API keys in headers, key and secret fields of any logged object. */
export const LOG_REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.headers.authorization',
  'key',
  '*.key',
  'secret',
  '*.secret',
]

/**
 * pino options for the process: secrets redacted; JSON lines, or pino-pretty's human-readable lines when `pretty`
 * (the process passes whether stdout is a terminal). How much is logged is LOG_LEVEL's business alone, never the
 * environment's name.
 */
export function loggerOptions(
  config: Pick<Config, 'logLevel'>,
  output: { pretty?: boolean; traceIds?: boolean } = {},
): LoggerOptions {
  return {
    level: config.logLevel,
    redact: { paths: LOG_REDACT, censor: '[redacted]' },
    // With tracing on, a line written inside a span names it: `trace_id` and `span_id` find the trace.
    ...(output.traceIds ? { mixin: traceLogFields } : {}),
    ...(output.pretty
      ? {
          transport: {
            target: 'pino-pretty',
            options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true },
          },
        }
      : {}),
  }
}
