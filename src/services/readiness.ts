import { type Migration, pendingMigrationCount, readMigrations } from '../db/migrate.ts'
import { AppError } from '../errors.ts'
import type { ServiceContext } from './context.ts'

let known: Promise<Migration[]> | undefined

/** GET /readyz: the database answers and every migration this build ships has been applied. */
export async function checkReadiness(ctx: Pick<ServiceContext, 'db'>): Promise<void> {
  known ??= readMigrations()
  const pending = await pendingMigrationCount(ctx.db, await known)
  if (pending > 0) throw new AppError('DATABASE_UNAVAILABLE', `${pending} migration(s) not applied yet`)
}
