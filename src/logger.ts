import type { LoggerOptions } from 'pino'
import type { Config } from './config.ts'

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
 * pino options for the process: JSON lines, secrets redacted. The same on every machine: how much is logged is
 * LOG_LEVEL's business alone, never the environment's name.
 */
export function loggerOptions(config: Pick<Config, 'logLevel'>): LoggerOptions {
  return {
    level: config.logLevel,
    redact: { paths: LOG_REDACT, censor: '[redacted]' },
  }
}
