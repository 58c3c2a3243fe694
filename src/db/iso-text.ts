/**
 * SQL for a timestamptz `column` as the API writes times (RFC 3339, UTC, milliseconds, `Z`), formatted by the
 * database: a read that returns times inside JSON, or a million of them, needs no Date per value. Truncates to
 * the millisecond, as node-postgres does when it reads a timestamptz into a Date.
 */
export function isoText(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
}
