import { generateKeyPairSync } from 'node:crypto'
import { buildApp } from '../src/app.ts'
import { appendAuditRecords } from '../src/audit-log/append.ts'
import { verifyLog } from '../src/audit-log/verify-log.ts'
import { verifyWorkers } from '../src/audit-log/verify-workers.ts'
import { signingKeyFromPem } from '../src/crypto/signing-key.ts'
import { migrate } from '../src/db/migrate.ts'
import { createPool, withTransaction } from '../src/db/pool.ts'
import { createApiKey } from '../src/services/keys.ts'
import { registerSigningKey } from '../src/services/signing-keys.ts'
import { fillAuditLog } from './audit-fill.ts'
import { createDatabase } from './database.ts'

/**
 * Figures of the verifiable log on a real PostgreSQL, in-process (no HTTP server, `inject`):
 *  - proof latency (inclusion with and without a size, consistency) at each log size,
 *  - `audit verify` throughput at each size,
 *  - sequencing lag (commit of a change → its record in the log) under concurrent writers.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/log-figures.ts 10000 100000 1000000
 */

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const sizes = process.argv.slice(2).map(Number)
const log = (line: string) => process.stdout.write(`${line}\n`)

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}
const ms = (n: number) => `${n.toFixed(2)} ms`

async function newApp(url: string) {
  const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const signingKey = await signingKeyFromPem(pem)
  // What the runtime does before building the app: migrate, record the signing key.
  const setup = createPool({ connectionString: url, max: 1 })
  try {
    await migrate(setup)
    await registerSigningKey(setup, signingKey)
  } finally {
    await setup.end()
  }
  const app = await buildApp({
    config: {
      connectionString: url,
      dbPoolMax: 10,
      bodyLimitBytes: 1 << 20,
      rateLimitPerMinute: 0,
      probeAllowedHosts: [],
      probeAllowPrivate: false,
      probeEnv: {},
    },
    signingKey,
  })
  const { key } = await createApiKey({ db: app.db }, { role: 'dashboard', label: 'bench' }, 'system')
  return { app, key }
}

async function proofsAndVerify() {
  const db = await createDatabase(adminUrl, 'log')
  try {
    const { app, key } = await newApp(db.url)
    const get = async (url: string) => {
      const started = performance.now()
      const response = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } })
      if (response.statusCode !== 200) throw new Error(`${url} → ${response.statusCode} ${response.body}`)
      return performance.now() - started
    }
    // The sequencer catches the app's own first record up before the synthetic history continues it.
    await app.services.auditLog.catchUp()
    for (const size of sizes) {
      const fill = await fillAuditLog(db.url, size, { timeOriginMs: Date.UTC(2026, 0, 1) })
      log(
        `\nlog of ${fill.total.toLocaleString('en-US')} records (filled ${fill.inserted} in ${(fill.ms / 1000).toFixed(1)} s)`,
      )
      const n = fill.total
      const rand = (max: number) => 1 + Math.floor(Math.random() * max)
      await get('/v1/audit/checkpoint') // signs the checkpoint of this size once
      const rounds = 300
      const figures: Record<string, number[]> = {
        inclusion: [],
        'inclusion@size': [],
        consistency: [],
        checkpoint: [],
      }
      for (let i = 0; i < rounds; i++) {
        figures.inclusion!.push(await get(`/v1/audit/proofs/inclusion?seq=${rand(n)}`))
        const size = rand(n)
        figures['inclusion@size']!.push(
          await get(`/v1/audit/proofs/inclusion?seq=${rand(size)}&tree_size=${size}`),
        )
        const to = rand(n)
        figures.consistency!.push(
          await get(`/v1/audit/proofs/consistency?from_size=${rand(to)}&to_size=${to}`),
        )
        figures.checkpoint!.push(await get('/v1/audit/checkpoint'))
      }
      for (const [name, values] of Object.entries(figures)) {
        log(
          `  ${name.padEnd(15)} p50 ${ms(percentile(values, 50))}  p95 ${ms(percentile(values, 95))}  (${rounds} requests)`,
        )
      }
      for (const workers of [0, verifyWorkers()]) {
        const started = performance.now()
        const cpu = process.cpuUsage()
        const report = await verifyLog(
          app.db,
          workers ? { parallel: { connectionString: db.url, workers } } : {},
        )
        const seconds = (performance.now() - started) / 1000
        const used = process.cpuUsage(cpu)
        log(
          `  verify (${workers ? `${workers} workers` : 'one thread'}) ${report.checked.toLocaleString('en-US')} records in ${seconds.toFixed(1)} s = ` +
            `${Math.round(report.checked / seconds).toLocaleString('en-US')} records/s (ok ${report.ok}, checkpoints ${report.checkpoints_checked}; ` +
            `main thread cpu ${((used.user + used.system) / 1e6).toFixed(1)} s)`,
        )
      }
    }
    await app.close()
  } finally {
    await db.drop()
  }
}

async function sequencingLag(writers: number, seconds: number) {
  const db = await createDatabase(adminUrl, 'lag')
  try {
    const { app } = await newApp(db.url)
    const lags: number[] = []
    const batchSizes: number[] = []
    app.services.auditLog.sequencer.onBatch(({ records }) => {
      const now = Date.now()
      batchSizes.push(records.length)
      for (const record of records) lags.push(now - Date.parse(record.at))
    })
    let stop = false
    let committed = 0
    const loops = Array.from({ length: writers }, async () => {
      while (!stop) {
        // A decide-path change writes 1–3 records (interpretation, manifest.issued, escalation.opened).
        await withTransaction(app.db, (tx) =>
          appendAuditRecords(
            tx,
            Array.from({ length: 1 + (committed % 3) }, () => ({
              kind: 'interpretation.recorded' as const,
              actor: 'bench',
              data: { n: committed },
            })),
          ),
        )
        committed += 1
      }
    })
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
    stop = true
    await Promise.all(loops)
    await app.services.auditLog.catchUp()
    log(
      `\nsequencing lag, ${writers} writers for ${seconds} s: ${committed} changes (${Math.round(committed / seconds)}/s), ` +
        `${lags.length} records in ${batchSizes.length} batches (mean ${(lags.length / batchSizes.length).toFixed(1)}/batch)`,
    )
    log(`  lag p50 ${percentile(lags, 50)} ms  p99 ${percentile(lags, 99)} ms  max ${Math.max(...lags)} ms`)
    await app.close()
  } finally {
    await db.drop()
  }
}

if (sizes.length > 0) await proofsAndVerify()
await sequencingLag(10, 10)
