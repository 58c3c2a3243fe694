import Fastify from 'fastify'
import pg from 'pg'

/**
 * The bare stack Arbiter runs on, and nothing else: fastify 5 and a pg pool of the same size, against the same
 * PostgreSQL. No schemas, no auth, no hashing, no audit chain, no signing. `bench/run.ts` divides Arbiter's
 * figures by this server's, so what remains is what Arbiter itself costs.
 *
 * Env: BASELINE_DATABASE_URL, PORT, BASELINE_POOL_MAX (Arbiter's default pool size is 10), BASELINE_LOG_LEVEL (unset:
 * no logger; `info`: fastify's own pino logger to stdout with its default request logging, two lines a request).
 *
 * POST /insert3  one transaction, three single-row inserts of the request body (~1 KB JSON) → 201 {ids}
 * GET  /select   ?id=N, one primary-key lookup → 200 the row (404 when absent)
 * GET  /readyz   200 once the table exists and the database answers
 */

const connectionString = process.env.BASELINE_DATABASE_URL
if (!connectionString) {
  process.stderr.write('baseline: BASELINE_DATABASE_URL is required\n')
  process.exit(1)
}
const port = Number(process.env.PORT ?? 0)
const poolMax = Number(process.env.BASELINE_POOL_MAX ?? 10)
const logLevel = process.env.BASELINE_LOG_LEVEL

// Same pool settings as src/db/pool.ts where they matter for throughput.
const pool = new pg.Pool({ connectionString, max: poolMax, idleTimeoutMillis: 10_000 })
pool.on('error', () => {})

await pool.query(`CREATE TABLE IF NOT EXISTS baseline_items (
  id bigserial PRIMARY KEY,
  position integer NOT NULL,
  body jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
)`)

const app = Fastify({ logger: logLevel ? { level: logLevel } : false, bodyLimit: 1024 * 1024 })

app.get('/readyz', async () => {
  await pool.query('SELECT 1')
  return { status: 'ready' }
})

app.post('/insert3', async (request, reply) => {
  const body = JSON.stringify(request.body ?? null)
  const client = await pool.connect()
  const ids: number[] = []
  try {
    await client.query('BEGIN')
    for (let position = 1; position <= 3; position++) {
      const { rows } = await client.query<{ id: string }>(
        'INSERT INTO baseline_items (position, body) VALUES ($1, $2::jsonb) RETURNING id',
        [position, body],
      )
      ids.push(Number(rows[0]!.id))
    }
    await client.query('COMMIT')
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  } finally {
    client.release()
  }
  return reply.code(201).send({ ids })
})

app.get('/select', async (request, reply) => {
  const id = Number((request.query as { id?: string }).id)
  if (!Number.isSafeInteger(id)) return reply.code(400).send({ error: 'id must be an integer' })
  const { rows } = await pool.query(
    'SELECT id, position, body, created_at FROM baseline_items WHERE id = $1',
    [id],
  )
  if (rows.length === 0) return reply.code(404).send({ error: `no row ${id}` })
  return rows[0]
})

const shutdown = async () => {
  await app.close()
  await pool.end()
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown())
process.on('SIGINT', () => void shutdown())

await app.listen({ port, host: '127.0.0.1' })
