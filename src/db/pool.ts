import pg from 'pg'

/**
 * How this service reads column types that pg would otherwise leave as strings: int8 (bigint) columns hold audit
 * sequence numbers and counts, far below 2^53, so they are read as numbers. Given to each pool and client this
 * service opens (pg's per-connection `types` option), never set process-wide: a library in the same process
 * that opens its own connections keeps pg's defaults.
 */
export const typeParsers: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 && format !== 'binary'
      ? parseInt8
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
}

function parseInt8(value: string): number {
  return Number.parseInt(value, 10)
}

/** Anything that runs a query: the pool itself or a transaction, so every query can join one. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>
  /** A statement with a `name` is parsed and planned once per connection (src/db/statement.ts runs those). */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(config: NamedQuery): Promise<pg.QueryResult<R>>
  /** Rows as arrays rather than objects (src/db/array-rows.ts). */
  query<R extends unknown[] = unknown[]>(config: pg.QueryArrayConfig): Promise<pg.QueryArrayResult<R>>
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
   * Prepare the statements marked `prepare` once per connection (default false: they run unnamed, as short-lived
   * pools such as the CLI's need). The app's pool prepares them (AppConfig.namedStatements).
   */
  namedStatements?: boolean
}

/**
 * The pools made with `namedStatements`, and the connections they open (a connection checked out for work that
 * is no transaction, such as the audit log's sequencer): the statement executor prepares statements only on these.
 */
const preparingPools = new WeakSet<pg.Pool>()
const preparingClients = new WeakSet<pg.ClientBase>()

export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5000,
    idleTimeoutMillis: 10_000,
    // A query that hangs (e.g. the server vanished mid-flight) must not pin a request forever.
    query_timeout: 30_000,
    application_name: 'arbiter',
    types: typeParsers,
  })
  if (options.namedStatements) preparingPools.add(pool)
  // An idle client losing its server emits 'error' on the pool; unhandled, it would crash the process.
  pool.on('error', (err) => options.onError?.(err))
  // A checked-out client has no pg-pool 'error' listener: a connection lost mid-request would otherwise surface as
  // an uncaught error and crash the process. The query in flight still fails (→ 503), the process lives on.
  pool.on('connect', (client) => {
    if (options.namedStatements) preparingClients.add(client)
    client.on('error', (err) => options.onError?.(err))
  })
  return pool
}

/**
 * One transaction on one connection, and what is to happen once it commits. Queries go through it like through
 * the pool (it is a Queryable), so a repository's statement runs the same inside a transaction or outside one.
 * Made only by `withTransaction`.
 */
export class Transaction implements Queryable {
  readonly #client: pg.PoolClient
  readonly #afterCommit: Array<() => void> = []
  /** Whether statements marked `prepare` are prepared on this connection (the pool's `namedStatements`). */
  readonly preparesStatements: boolean

  private constructor(client: pg.PoolClient, preparesStatements: boolean) {
    this.#client = client
    this.preparesStatements = preparesStatements
  }

  /** Queryable's query, on this transaction's connection. */
  readonly query: Queryable['query'] = (
    textOrConfig: string | NamedQuery | pg.QueryArrayConfig,
    values?: unknown[],
  ): Promise<pg.QueryResult> =>
    typeof textOrConfig === 'string'
      ? this.#client.query(textOrConfig, values)
      : this.#client.query(textOrConfig as pg.QueryConfig)

  /** Runs `hook` after this transaction commits; never if it rolls back. */
  afterCommit(hook: () => void): void {
    this.#afterCommit.push(hook)
  }

  /** See withTransaction. */
  static async run<T>(pool: pg.Pool, fn: (tx: Transaction) => Promise<T>): Promise<T> {
    const client = await pool.connect()
    const tx = new Transaction(client, preparingPools.has(pool))
    let broken: Error | undefined
    let result: T
    try {
      await client.query('BEGIN')
      result = await fn(tx)
      await client.query('COMMIT')
    } catch (err) {
      try {
        await client.query('ROLLBACK')
      } catch (rollbackErr) {
        // The connection is unusable (e.g. the server went away); do not return it to the pool.
        broken = rollbackErr as Error
      }
      throw err
    } finally {
      client.release(broken)
    }
    // After the COMMIT and the connection's release, outside the try: a hook runs only for what is committed, and
    // one that throws cannot turn a committed write into a rollback attempt.
    for (const hook of tx.#afterCommit) hook()
    return result
  }
}

/** Whether `db` prepares the statements marked `prepare` (see PoolOptions.namedStatements). */
export function preparesStatements(db: Queryable): boolean {
  if (db instanceof Transaction) return db.preparesStatements
  if (db instanceof pg.Pool) return preparingPools.has(db)
  return preparingClients.has(db as pg.ClientBase)
}

/**
 * Runs `fn` inside one transaction on one connection. Everything `fn` does must go through the transaction it is
 * given: the embedded database serves one transaction at a time, so a second pool query from inside `fn` would
 * wait for this very transaction to end.
 */
export function withTransaction<T>(pool: pg.Pool, fn: (tx: Transaction) => Promise<T>): Promise<T> {
  return Transaction.run(pool, fn)
}

/**
 * Runs `hook` once what `db` wrote is committed: after the COMMIT when `db` is a Transaction, or at once when it
 * is not (its statements commit as they run). Never runs after a rollback.
 */
export function afterCommit(db: Queryable, hook: () => void): void {
  if (db instanceof Transaction) db.afterCommit(hook)
  else hook()
}
