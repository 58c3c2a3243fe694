import type { PGlite } from '@electric-sql/pglite'

/**
 * What autovacuum does for a PostgreSQL server, done for the embedded database: PGlite counts each table's
 * changes (pg_stat_user_tables) but has no background worker to act on them. Without this an embedded database
 * would never gather statistics (its plans, prepared ones included, would stay those made for empty tables) and
 * never reclaim the row versions its updates leave behind.
 *
 * Every `intervalMs` it reads each table's counters and applies autovacuum's default rules to each
 * (`maintenanceFor`), then runs the commands due one table at a time, each through PGliteWireServer.whenIdle:
 * between two clients' units, never inside a transaction, taking turns with the clients' work.
 */

/** Autovacuum's defaults: a table is analyzed after 50 + 10% of its rows changed ... */
const ANALYZE_BASE = 50
const ANALYZE_SCALE = 0.1
/** ... and vacuumed after 50 + 20% of its rows died, or 1000 + 20% were inserted since its last vacuum. */
const VACUUM_BASE = 50
const VACUUM_SCALE = 0.2
const VACUUM_INSERT_BASE = 1000
const VACUUM_INSERT_SCALE = 0.2
/** A database-wide VACUUM (system catalogs too) once the oldest unfrozen transaction id is this old. */
export const FREEZE_AGE = 150_000_000

/** One table's counters, as pg_stat_user_tables and pg_class keep them. */
export interface TableActivity {
  /** Its schema-qualified name, quoted where SQL needs it (`public.outcomes`). */
  name: string
  /** Rows at its last vacuum or analyze (pg_class.reltuples; -1 before the first). */
  rows: number
  changedSinceAnalyze: number
  deadRows: number
  insertedSinceVacuum: number
}

export type MaintenanceCommand = 'VACUUM (ANALYZE)' | 'VACUUM' | 'ANALYZE'

/** What a table needs now by autovacuum's default rules, or null. Pure. */
export function maintenanceFor(table: TableActivity): MaintenanceCommand | null {
  const rows = Math.max(0, table.rows)
  const vacuum =
    table.deadRows > VACUUM_BASE + VACUUM_SCALE * rows ||
    table.insertedSinceVacuum > VACUUM_INSERT_BASE + VACUUM_INSERT_SCALE * rows
  const analyze = table.changedSinceAnalyze > ANALYZE_BASE + ANALYZE_SCALE * rows
  if (vacuum) return analyze ? 'VACUUM (ANALYZE)' : 'VACUUM'
  return analyze ? 'ANALYZE' : null
}

/**
 * The commands due, in order: a database-wide VACUUM first when the oldest unfrozen transaction id is older than
 * FREEZE_AGE (it freezes old rows, system catalogs' too), then each table's own. Pure.
 */
export function commandsDue(tables: TableActivity[], frozenAge: number): string[] {
  const commands = frozenAge > FREEZE_AGE ? ['VACUUM'] : []
  for (const table of tables) {
    const command = maintenanceFor(table)
    if (command) commands.push(`${command} ${table.name}`)
  }
  return commands
}

export interface MaintenanceRun {
  durationMs: number
  /** What ran, in order (`ANALYZE public.outcomes`); a command that failed is left out (and due again). */
  commands: string[]
}

/** The session the maintenance may use: a task runs while no client holds a transaction open. */
export type IdleSession = <T>(task: (db: PGlite) => Promise<T>) => Promise<T>

const READ_ACTIVITY = `SELECT format('%I.%I', s.schemaname, s.relname) AS name, c.reltuples::float8 AS rows,
  s.n_mod_since_analyze::float8 AS changed, s.n_dead_tup::float8 AS dead, s.n_ins_since_vacuum::float8 AS inserted,
  (SELECT age(datfrozenxid) FROM pg_database WHERE datname = current_database()) AS frozen_age
FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
ORDER BY s.relid`

async function readCommandsDue(db: PGlite): Promise<string[]> {
  const { rows } = await db.query<{
    name: string
    rows: number
    changed: number
    dead: number
    inserted: number
    frozen_age: number
  }>(READ_ACTIVITY)
  const tables = rows.map((row) => ({
    name: row.name,
    rows: row.rows,
    changedSinceAnalyze: row.changed,
    deadRows: row.dead,
    insertedSinceVacuum: row.inserted,
  }))
  return commandsDue(tables, rows[0]?.frozen_age ?? 0)
}

export class EmbeddedMaintenance {
  private timer: NodeJS.Timeout | null = null
  private running: Promise<void> | null = null
  private stopping = false

  constructor(
    private readonly idle: IdleSession,
    private readonly options: { intervalMs: number; onRun?: (run: MaintenanceRun) => void },
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.check().finally(() => {
        this.running = null
      })
    }, this.options.intervalMs)
    this.timer.unref()
  }

  /** No further check starts and a run under way stops before its next command; resolves once it has. */
  stop(): Promise<void> {
    this.stopping = true
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    return this.running ?? Promise.resolve()
  }

  private async check(): Promise<void> {
    let due: string[]
    try {
      due = await this.idle(readCommandsDue)
    } catch {
      return // the database closing under it: the next tick, if any, tries again
    }
    const started = performance.now()
    const done: string[] = []
    for (const command of due) {
      if (this.stopping) break
      try {
        await this.idle((db) => db.exec(command))
        done.push(command)
      } catch {
        // Left due: its counters are unchanged, so the next tick tries this table again (and only those like it).
      }
    }
    if (done.length > 0) this.options.onRun?.({ durationMs: performance.now() - started, commands: done })
  }
}
