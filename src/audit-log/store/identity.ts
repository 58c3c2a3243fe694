import type { Queryable } from '../../db/pool.ts'

/** log_identity: one row; log_id is a UUID created with the database, naming the log (the default origin). */
export async function readLogId(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ log_id: string }>('SELECT log_id FROM log_identity')
  return rows[0]!.log_id
}
