import pg from 'pg'

// int8 (bigint) columns hold audit sequence numbers and counts, far below 2^53: read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number.parseInt(value, 10))

/** Anything that runs a query: the pool itself or a client inside a transaction, so every query can join one. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>
  /** A statement with a `name` is parsed and planned once per connection (src/db/statement.ts). */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(config: NamedQuery): Promise<pg.QueryResult<R>>
}

export interface NamedQuery {
  name?: string | undefined
  text: string
  values?: unknown[]
}

export type Pool = pg.Pool

export interface PoolOptions {
  connectionString: string
  max: number
  /** How long a request may wait for a connection before it fails with 503. */
  connectionTimeoutMillis?: number
  onError?: (err: Error) => void
  /**
   * Keep the names of named statements, so each is prepared once per connection (default false: they run
   * unnamed, as short-lived pools such as the CLI's need). The app's pool keeps them (AppConfig.namedStatements).
   */
  namedStatements?: boolean
}

export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5000,
    idleTimeoutMillis: 10_000,
    // A query that hangs (e.g. the server vanished mid-flight) must not pin a request forever.
    query_timeout: 30_000,
    application_name: 'arbiter',
  })
  // An idle client losing its server emits 'error' on the pool; unhandled, it would crash the process.
  pool.on('error', (err) => options.onError?.(err))
  // A checked-out client has no pg-pool 'error' listener: a connection lost mid-request would otherwise surface as
  // an uncaught error and crash the process. The query in flight still fails (→ 503), the process lives on.
  pool.on('connect', (client) => {
    client.on('error', (err) => options.onError?.(err))
    if (!options.namedStatements) runUnnamed(client)
  })
  return pool
}

/** Makes `client` run every named statement unnamed (parsed each time, as any other). */
function runUnnamed(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown
  ;(client as unknown as { query: unknown }).query = (config: unknown, ...rest: unknown[]) =>
    typeof config === 'object' && config !== null && 'name' in config
      ? query({ ...config, name: undefined }, ...rest)
      : query(config, ...rest)
}

/**
 * Runs `fn` inside one transaction on one client. Everything `fn` does must go through the client it is given:
 * the embedded database serves one transaction at a time, so a second pool query from inside `fn` would wait
 * for this very transaction to end.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  const hooks: Array<() => void> = []
  try {
    await client.query('BEGIN')
    ;(client as TransactionClient)[AFTER_COMMIT] = hooks
    const result = await fn(client)
    await client.query('COMMIT')
    for (const hook of hooks) hook()
    return result
  } catch (err) {
    try {
      await client.query('ROLLBACK')
    } catch (rollbackErr) {
      // The connection is unusable (e.g. the server went away); do not return it to the pool.
      broken = rollbackErr as Error
    }
    throw err
  } finally {
    delete (client as TransactionClient)[AFTER_COMMIT]
    client.release(broken)
  }
}

const AFTER_COMMIT = Symbol('afterCommit')
type TransactionClient = pg.PoolClient & { [AFTER_COMMIT]?: Array<() => void> }

/**
 * Runs `hook` once what `db` wrote is committed: after the COMMIT of the `withTransaction` that `db` belongs to,
 * or at once when `db` is not inside one (its statements commit as they run). Never runs after a rollback.
 */
export function afterCommit(db: Queryable, hook: () => void): void {
  const hooks = (db as TransactionClient)[AFTER_COMMIT]
  if (hooks) hooks.push(hook)
  else hook()
}
