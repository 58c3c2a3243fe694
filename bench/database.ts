import { randomBytes } from 'node:crypto'
import pg from 'pg'

/** A database created for one benchmark run on the local server, dropped at the end (WITH FORCE). */
export interface BenchDatabase {
  name: string
  url: string
  drop(): Promise<void>
}

/** Creates `arbiter_bench_<tag>_<pid>_<random>` from the server that `adminUrl` names. */
export async function createDatabase(adminUrl: string, tag: string): Promise<BenchDatabase> {
  const name = `arbiter_bench_${tag}_${process.pid}_${randomBytes(3).toString('hex')}`
  await withClient(adminUrl, (client) => client.query(`CREATE DATABASE ${name}`))
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  let dropped = false
  return {
    name,
    url: url.toString(),
    async drop() {
      if (dropped) return
      dropped = true
      await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
    },
  }
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
