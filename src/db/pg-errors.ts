/** PostgreSQL SQLSTATE codes the service reacts to, by name, each with what it means. */
export const PG = {
  // 23505 unique_violation: a row that a concurrent transaction committed first (the loser of a race).
  UNIQUE_VIOLATION: '23505',
  // 22P05 untranslatable_character / 22021 character_not_in_repertoire: e.g. U+0000 in text or jsonb.
  UNTRANSLATABLE_CHARACTER: '22P05',
  CHARACTER_NOT_IN_REPERTOIRE: '22021',
  // 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now, 53300 too_many_connections.
  ADMIN_SHUTDOWN: '57P01',
  CRASH_SHUTDOWN: '57P02',
  CANNOT_CONNECT_NOW: '57P03',
  TOO_MANY_CONNECTIONS: '53300',
} as const

export function pgErrorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

const UNAVAILABLE_CODES = new Set<string>([
  PG.ADMIN_SHUTDOWN,
  PG.CRASH_SHUTDOWN,
  PG.CANNOT_CONNECT_NOW,
  PG.TOO_MANY_CONNECTIONS,
])
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
])
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error',
  'Connection ended unexpectedly',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
]

/** True when the error means "the database cannot be reached right now" (→ 503, retry later). */
export function isDatabaseUnavailable(err: unknown): boolean {
  const code = pgErrorCode(err)
  if (code !== undefined && (UNAVAILABLE_CODES.has(code) || NETWORK_CODES.has(code))) return true
  const message = (err as Error | null)?.message ?? ''
  return UNAVAILABLE_MESSAGES.some((fragment) => message.includes(fragment))
}
