import type { LoggerOptions } from 'pino'
import { LOG_REDACT } from './app.ts'
import type { Config } from './config.ts'

/** pino options for the process: JSON lines, secrets redacted (never branch on NODE_ENV, STYLE §7). */
export function loggerOptions(config: Pick<Config, 'logLevel'>): LoggerOptions {
  return {
    level: config.logLevel,
    redact: { paths: LOG_REDACT, censor: '[redacted]' },
  }
}
