import { randomBytes } from 'node:crypto'
import pg from 'pg'

/** A database created for one benchmark run on the local server, dropped at the end (WITH FORCE). */
export interface BenchDatabase {
  name: string
  url: string
  drop(): Promise<void>
}

/** Creates `arbiter_bench_<tag>_<pid>_<random>` on the server that `adminUrl` names, with database-level settings. */
export async function createDatabase(
  adminUrl: string,
  tag: string,
  settings: Record<string, string> = {},
): Promise<BenchDatabase> {
  const name = `arbiter_bench_${tag}_${process.pid}_${randomBytes(3).toString('hex')}`
  await withClient(adminUrl, async (client) => {
    await client.query(`CREATE DATABASE ${name}`)
    // Investigation only (BENCH_DB_SETTINGS), e.g. synchronous_commit=off to see what WAL flushes cost.
    for (const [setting, value] of Object.entries(settings)) {
      if (!/^[a-z_]+$/.test(setting)) throw new Error(`bad setting name ${setting}`)
      await client.query(`ALTER DATABASE ${name} SET ${setting} = ${client.escapeLiteral(value)}`)
    }
  })
  let dropped = false
  return {
    name,
    url: databaseUrl(adminUrl, name),
    async drop() {
      if (dropped) return
      dropped = true
      await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
    },
  }
}

/** The URL of database `name` on the server that `adminUrl` names. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

/**
 * ANALYZE every table of the database, as autovacuum does on a running service's database while its tables grow
 * (after 10% new rows). A bench database is seconds old and has never been analyzed: statements are planned from
 * empty-table estimates, and each pooled connection keeps the plans of the statements it prepared (a scan of a
 * table that has since grown, a lookup through the wrong index) until an ANALYZE invalidates them.
 */
export async function analyzeDatabase(url: string): Promise<void> {
  await withClient(url, (client) => client.query('ANALYZE'))
}

export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}
