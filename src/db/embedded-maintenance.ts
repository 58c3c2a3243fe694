import type { PGlite } from '@electric-sql/pglite'

/**
 * What autovacuum does for a PostgreSQL server, done for the embedded database, which has none (PGlite is one
 * session, with no background workers, and keeps no per-table change counters either). Without it an embedded
 * database would never gather statistics (its plans, prepared ones included, would stay those made for empty
 * tables), never reclaim the row versions its updates leave behind, and never freeze old rows.
 *
 * Every `intervalMs` it reads how many transactions were started since its last run (the next transaction id)
 * and how many rows the tables held at that run (their estimates), and runs `VACUUM (ANALYZE)` when
 * `maintenanceDue` says so, table by table, each between two clients' units and never inside a transaction
 * (PGliteWireServer.whenIdle): the session is held for one table at a time (about half a second for a table of
 * 300,000 rows on the bench machine).
 */

/** Transactions since the last run that make a run due, whatever the tables hold (autovacuum's base threshold). */
export const MAINTENANCE_BASE_TRANSACTIONS = 200
/** ... plus this share of the rows the tables held at the last run (autovacuum's scale factor for ANALYZE). */
export const MAINTENANCE_SCALE = 0.1

/** Whether the database has changed enough since the last run to vacuum and analyze it again. Pure. */
export function maintenanceDue(transactionsSince: number, rowsAtLastRun: number): boolean {
  return transactionsSince >= MAINTENANCE_BASE_TRANSACTIONS + MAINTENANCE_SCALE * Math.max(0, rowsAtLastRun)
}

export interface MaintenanceRun {
  durationMs: number
  /** Rows in the tables afterwards (estimates, as VACUUM leaves them). */
  rows: number
}

/** The session the maintenance may use: a task runs while no client holds a transaction open. */
export type IdleSession = <T>(task: (db: PGlite) => Promise<T>) => Promise<T>

const READ_STATE = `SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS next_xid,
  (SELECT coalesce(sum(c.reltuples), 0) FROM pg_class c JOIN pg_stat_user_tables t ON t.relid = c.oid
    WHERE c.reltuples > 0)::float8 AS rows`

// Every user table, its name quoted (format's %I).
const LIST_TABLES = `SELECT format('%I.%I', schemaname, relname) AS name FROM pg_stat_user_tables ORDER BY relid`

interface State {
  nextXid: bigint
  rows: number
}

async function readState(db: PGlite): Promise<State> {
  const { rows } = await db.query<{ next_xid: string; rows: number }>(READ_STATE)
  return { nextXid: BigInt(rows[0]!.next_xid), rows: Number(rows[0]!.rows) }
}

export class EmbeddedMaintenance {
  private timer: NodeJS.Timeout | null = null
  private last: State | null = null
  private running: Promise<void> | null = null

  constructor(
    private readonly idle: IdleSession,
    private readonly options: { intervalMs: number; onRun?: (run: MaintenanceRun) => void },
  ) {}

  /** Takes the first mark now (a database just opened kept the statistics of its last run), then checks. */
  start(): void {
    this.running = this.check().finally(() => {
      this.running = null
    })
    this.timer = setInterval(() => {
      this.running ??= this.check().finally(() => {
        this.running = null
      })
    }, this.options.intervalMs)
    this.timer.unref()
  }

  /** Stops the timer and waits for a run under way. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.running
  }

  private async check(): Promise<void> {
    try {
      const tables = await this.idle(async (db) => {
        const now = await readState(db)
        const due =
          this.last !== null && maintenanceDue(Number(now.nextXid - this.last.nextXid), this.last.rows)
        if (this.last === null) this.last = now
        return due ? (await db.query<{ name: string }>(LIST_TABLES)).rows.map((row) => row.name) : []
      })
      if (tables.length === 0) return
      const started = performance.now()
      // A table at a time, each between two clients' units: the session is never held for the whole database.
      for (const table of tables) await this.idle((db) => db.exec(`VACUUM (ANALYZE) ${table}`))
      const after = await this.idle(readState)
      this.last = after
      this.options.onRun?.({ durationMs: performance.now() - started, rows: after.rows })
    } catch {
      // A failed run (the database closing under it) is tried again at the next tick.
    }
  }
}
