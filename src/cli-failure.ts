import { UsageError } from './cli-args.ts'
import { AppError } from './errors.ts'

/** A command that reads what a database holds found none where it looked: it creates none (exit 2). */
export class NoDatabaseError extends Error {
  override name = 'NoDatabaseError'
}

/**
 * What the CLI tells a user when a command fails, and its exit code. A PostgreSQL error's own text (which quotes
 * SQL types, values and internals) never reaches the user: it is named by its SQLSTATE class and what to check.
 */
export function describeCliFailure(err: unknown): { message: string; exitCode: number } {
  if (err instanceof UsageError || err instanceof NoDatabaseError)
    return { message: err.message, exitCode: 2 }
  if (err instanceof AppError) return { message: err.message, exitCode: err.error === 'VALIDATION' ? 2 : 1 }
  const sqlState = databaseErrorCode(err)
  if (sqlState !== null) return { message: databaseFailure(sqlState), exitCode: 1 }
  const code = (err as NodeJS.ErrnoException | null)?.code
  if (typeof code === 'string' && CONNECTION_ERRORS.has(code)) {
    return { message: `cannot reach the database (${code}): check DATABASE_URL`, exitCode: 1 }
  }
  return { message: err instanceof Error ? err.message : String(err), exitCode: 1 }
}

const CONNECTION_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
])

/**
 * The SQLSTATE of an error the database sent (pg's DatabaseError carries `severity` and a five-character `code`),
 * or null for any other error. Duck-typed so that `arbiter verify` never loads the database driver.
 */
function databaseErrorCode(err: unknown): string | null {
  if (typeof err !== 'object' || err === null) return null
  const { code, severity } = err as { code?: unknown; severity?: unknown }
  return typeof severity === 'string' && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null
}

function databaseFailure(sqlState: string): string {
  // 28xxx invalid_authorization_specification (28P01 invalid_password, 28000 no pg_hba.conf entry)
  if (sqlState.startsWith('28'))
    return `the database refused the credentials in DATABASE_URL (SQLSTATE ${sqlState})`
  // 3D000 invalid_catalog_name: the database named in the URL does not exist
  if (sqlState === '3D000') return 'the database named in DATABASE_URL does not exist (SQLSTATE 3D000)'
  // 08xxx connection_exception, 57P0x the server is shutting down or cannot connect now
  if (sqlState.startsWith('08') || sqlState.startsWith('57P')) {
    return `the database connection failed (SQLSTATE ${sqlState}): check that it is up and try again`
  }
  return `the database refused the command (SQLSTATE ${sqlState}); if the schema is behind this build, run \`npm run arbiter -- migrate\``
}
