import { type Statement, statement } from '../../db/statement.ts'

/** log_identity: one row; log_id is a UUID created with the database, naming the log (the default origin). */
export function logId(): Statement<{ log_id: string }> {
  return statement('SELECT log_id FROM log_identity')
}
