import { generateKeyPairSync } from 'node:crypto'
import { signCheckpoint } from '../../src/audit-log/checkpoints.ts'
import { hashAuditRecord } from '../../src/audit-log/core/records.ts'
import { auditHead, auditRange } from '../../src/audit-log/store/records.ts'
import { signingKeyFromPem } from '../../src/crypto/signing-key.ts'
import { createPool } from '../../src/db/pool.ts'
import { queryOne, queryRows } from '../../src/db/statement.ts'
import {
  checkChainSeams,
  fillAuditLog,
  SYNTHETIC_ORCHESTRATORS,
  syntheticOrchestratorId,
} from '../audit-fill.ts'
import { cfg } from '../config.ts'
import { createDatabase, withClient } from '../database.ts'
import { type CannonResult, cannon, HttpTarget, type LatencySummary, summarize } from '../load.ts'
import {
  baselineRows,
  type CpuFigures,
  cycler,
  log,
  measuredCannon,
  onCleanup,
  type Run,
} from '../run-context.ts'
import { startArbiter } from '../servers.ts'
import { createKey } from '../workloads.ts'

/**
 * Phase 4, audit: filtered audit queries and chain verification at 10k, 100k and 1M records (a synthetic
 * history), on a database of its own and a second Arbiter process.
 */
type EndpointState = 'ok' | 'missing' | `error: ${string}`

export interface AuditLevel {
  records: number
  fill: { inserted: number; seconds: number }
  baselineSelect: (CannonResult & { cpu: CpuFigures }) | null
  byOrchestrator: (CannonResult & { cpu: CpuFigures }) | null
  byOrchestratorAndKind: CannonResult | null
  answerCheck: string
  p95Ratio: number | null
  verify: {
    ok: boolean
    checked: number
    seconds: number
    recordsPerSecond: number
    firstBadSeq: number | null
  } | null
  verifyNote: string | null
  /** GET /v1/audit/proofs/…, sequential requests with random arguments (PROOF_REQUESTS each). */
  proofs: { inclusion: LatencySummary; inclusionAtSize: LatencySummary; consistency: LatencySummary } | null
}

export interface AuditPhase {
  status: string
  records: EndpointState
  verify: EndpointState
  connections: number
  /** This process hashing the same kind of records with hashAuditRecord (no database, no HTTP). */
  hashReferencePerS: number
  levels: AuditLevel[]
  /**
   * Checkpoints signed and stored one after another at the largest level (this process, the service's own
   * signCheckpoint: root from the stored nodes, note and JWS signatures, insert), per second.
   */
  checkpointSigning: { checkpoints: number; perSecond: number } | null
}

const PROOF_REQUESTS = 200
const SIGNED_CHECKPOINTS = 100

async function probeEndpoint(target: HttpTarget, key: string, path: string): Promise<EndpointState> {
  const res = await target.pool.request({ method: 'GET', path, headers: { authorization: `Bearer ${key}` } })
  const text = await res.body.text()
  if (res.statusCode === 200) return 'ok'
  if (res.statusCode === 404 && /no route/i.test(text)) return 'missing'
  return `error: ${res.statusCode} ${text.slice(0, 200)}`
}

function hashReferenceRate(): number {
  // The same records the fill writes, hashed in this process: what verification costs with no I/O at all.
  const sample = {
    seq: 1,
    at: new Date().toISOString(),
    kind: 'interpretation.recorded' as const,
    actor: '6f1f7a55-3c1e-4a53-9d43-0d5e0f0c1b2a',
    outcome_id: '0b8e3d1e-7a55-4c1e-9d43-6f1f0d5e0f0c',
    manifest_id: null,
    subagent_id: 'subagent-07',
    orchestrator_id: 'orch-0421',
    verdict: null,
    data: {
      interpretation_id: '9d436f1f-7a55-4c1e-0b8e-3d1e0d5e0f0c',
      revision: 1,
      success_criterion_signature: `sha256:${'a1'.repeat(32)}`,
      outcome_interpretation: 'failure',
      evidence_hash: `sha256:${'b2'.repeat(32)}`,
      intended_action: { kind: 'compensate', resources: ['refund:re_1'] },
    },
    prev_hash: `sha256:${'0'.repeat(64)}`,
  }
  const n = 30_000
  const started = performance.now()
  for (let i = 0; i < n; i++) sample.prev_hash = hashAuditRecord({ ...sample, seq: i + 1 })
  return n / ((performance.now() - started) / 1000)
}

export async function phaseAudit(run: Run): Promise<AuditPhase> {
  const auditDb = await createDatabase(cfg.adminUrl, 'audit', cfg.dbSettings)
  onCleanup('drop audit database', () => auditDb.drop())
  log(`audit: second Arbiter on its own database ${auditDb.name}`)
  const arbiter = await startArbiter({
    repoRoot: cfg.arbiterRoot,
    databaseUrl: auditDb.url,
    poolMax: cfg.poolMax,
    name: 'arbiter-audit',
    cpuProfileDir: cfg.cpuProfileDir,
  })
  onCleanup('stop arbiter-audit', () => arbiter.stop())
  run.memories.push({ name: 'arbiter (audit phase)', sampler: arbiter.memory })
  const target = new HttpTarget(arbiter.origin, 2)
  try {
    const opsKey = await createKey(target, arbiter.adminKey, { role: 'ops', label: 'bench ops' })
    const records = await probeEndpoint(target, opsKey, '/v1/audit/records?limit=1')
    const verify = await probeEndpoint(target, opsKey, '/v1/audit/verify?from_seq=1&to_seq=1')
    const phase: AuditPhase = {
      status: 'ok',
      records,
      verify,
      connections: cfg.auditConnections,
      hashReferencePerS: hashReferenceRate(),
      levels: [],
      checkpointSigning: null,
    }
    if (records !== 'ok' && verify !== 'ok') {
      phase.status = records === 'missing' && verify === 'missing' ? 'skipped: endpoint missing' : 'skipped'
      log(`audit: ${phase.status} (records: ${records}; verify: ${verify})`)
      return phase
    }
    const maxLevel = Math.max(...cfg.auditLevels)
    const timeOriginMs = Date.now() - maxLevel * 5
    const auth = { authorization: `Bearer ${opsKey}` }
    let pick = 0
    const nextOrchestrator = () => syntheticOrchestratorId((pick++ * 7919) % SYNTHETIC_ORCHESTRATORS)
    for (const level of [...cfg.auditLevels].sort((a, b) => a - b)) {
      arbiter.memory.phase = `audit fill ${level}`
      log(`audit: filling the log to ${level} records`)
      const fill = await fillAuditLog(auditDb.url, level, { timeOriginMs })
      // Autovacuum analyzes a table after 10% new rows; do it now so the planner sees what production would.
      await withClient(auditDb.url, (client) => client.query('ANALYZE audit_records'))
      if (fill.firstSeq !== null) await checkChainSeams(auditDb.url, [fill.firstSeq, fill.total])
      log(`audit: ${fill.inserted} records written in ${(fill.ms / 1000).toFixed(1)}s, chain seams verified`)
      const entry: AuditLevel = {
        records: fill.total,
        fill: { inserted: fill.inserted, seconds: fill.ms / 1000 },
        baselineSelect: null,
        byOrchestrator: null,
        byOrchestratorAndKind: null,
        answerCheck: 'not run',
        p95Ratio: null,
        verify: null,
        verifyNote: null,
        proofs: null,
      }
      if (records === 'ok') {
        entry.answerCheck = await checkAuditAnswer(target, opsKey, syntheticOrchestratorId(421))
        const common = { connections: cfg.auditConnections, durationS: cfg.auditS }
        log(`audit: baseline GET /select, then filtered audit queries, ${cfg.auditConnections} connections`)
        const nextRow = cycler(Array.from({ length: await baselineRows(run) }, (_, i) => i + 1))
        entry.baselineSelect = await measuredCannon(run.mainDb.name, run.baseline.proc.pid, {
          ...common,
          origin: run.baseline.origin,
          nextPath: () => `/select?id=${nextRow()}`,
        })
        arbiter.memory.phase = `audit query ${level}`
        entry.byOrchestrator = await measuredCannon(auditDb.name, arbiter.proc.pid, {
          ...common,
          origin: arbiter.origin,
          headers: auth,
          nextPath: () => `/v1/audit/records?orchestrator_id=${nextOrchestrator()}&limit=50`,
        })
        entry.byOrchestratorAndKind = await cannon({
          ...common,
          origin: arbiter.origin,
          headers: auth,
          nextPath: () =>
            `/v1/audit/records?orchestrator_id=${nextOrchestrator()}&kind=interpretation.recorded&limit=50`,
        })
        entry.p95Ratio = entry.byOrchestrator.latency.p95 / entry.baselineSelect.latency.p95
      }
      if (verify === 'ok') {
        arbiter.memory.phase = `audit verify ${level}`
        log(`audit: GET /v1/audit/verify over ${fill.total} records`)
        const started = performance.now()
        try {
          const res = await target.call<{ ok: boolean; checked: number; first_bad_seq: number | null }>(
            null,
            'GET',
            '/v1/audit/verify',
            { key: opsKey, label: 'verify', expect: [200] },
          )
          const seconds = (performance.now() - started) / 1000
          entry.verify = {
            ok: res.body.ok,
            checked: res.body.checked,
            seconds,
            recordsPerSecond: res.body.checked / seconds,
            firstBadSeq: res.body.first_bad_seq,
          }
          if (!res.body.ok) entry.verifyNote = `chain reported bad at seq ${res.body.first_bad_seq}`
          else if (res.body.checked !== fill.total)
            entry.verifyNote = `checked ${res.body.checked} of ${fill.total} records`
        } catch (err) {
          entry.verifyNote = `failed: ${(err as Error).message.slice(0, 200)}`
        }
      }
      arbiter.memory.phase = `audit proofs ${level}`
      log(`audit: inclusion and consistency proofs at ${fill.total} records, ${PROOF_REQUESTS} requests each`)
      entry.proofs = await proofLatencies(target, opsKey, fill.total)
      phase.levels.push(entry)
    }
    log(`audit: signing ${SIGNED_CHECKPOINTS} checkpoints`)
    phase.checkpointSigning = await checkpointSigningRate(auditDb.url)
    return phase
  } finally {
    await target.close()
    await arbiter.stop()
  }
}

/** Sequential proof requests with random arguments over a log of `size` records: p50/p95 of each kind. */
async function proofLatencies(target: HttpTarget, key: string, size: number): Promise<AuditLevel['proofs']> {
  const rand = (max: number) => 1 + Math.floor(Math.random() * max)
  const timed = async (path: string) => {
    const started = performance.now()
    await target.call(null, 'GET', path, { key, label: 'proof', expect: [200] })
    return performance.now() - started
  }
  const inclusion: number[] = []
  const inclusionAtSize: number[] = []
  const consistency: number[] = []
  for (let i = 0; i < PROOF_REQUESTS; i++) {
    inclusion.push(await timed(`/v1/audit/proofs/inclusion?seq=${rand(size)}`))
    const treeSize = rand(size)
    inclusionAtSize.push(
      await timed(`/v1/audit/proofs/inclusion?seq=${rand(treeSize)}&tree_size=${treeSize}`),
    )
    const to = rand(size)
    consistency.push(await timed(`/v1/audit/proofs/consistency?from_size=${rand(to)}&to_size=${to}`))
  }
  return {
    inclusion: summarize(inclusion),
    inclusionAtSize: summarize(inclusionAtSize),
    consistency: summarize(consistency),
  }
}

/**
 * Signs checkpoints at the last SIGNED_CHECKPOINTS sizes of the log (one after another, as the service's
 * background checkpointer does), with a key of this process: the rate of root + note + JWS + insert.
 */
async function checkpointSigningRate(url: string): Promise<AuditPhase['checkpointSigning']> {
  const pool = createPool({ connectionString: url, max: 1 })
  try {
    const head = await queryOne(pool, auditHead())
    const from = Math.max(1, head.tree_size - SIGNED_CHECKPOINTS)
    const records = await queryRows(pool, auditRange(from, head.tree_size - 1, SIGNED_CHECKPOINTS))
    const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
    const signer = { origin: 'bench.local/log', key: await signingKeyFromPem(pem) }
    const started = performance.now()
    for (const record of records) await signCheckpoint(pool, signer, record.seq, record.hash)
    const seconds = (performance.now() - started) / 1000
    return { checkpoints: records.length, perSecond: records.length / seconds }
  } finally {
    await pool.end()
  }
}

/** One filtered query, checked: 200, {items, next_cursor}, at most 50 items, all for the orchestrator asked. */
async function checkAuditAnswer(target: HttpTarget, key: string, orchestratorId: string): Promise<string> {
  try {
    const res = await target.call<{
      items: { orchestrator_id: string | null; seq: number }[]
      next_cursor: unknown
    }>(null, 'GET', `/v1/audit/records?orchestrator_id=${orchestratorId}&limit=50`, {
      key,
      label: 'audit',
      expect: [200],
    })
    const { items } = res.body
    if (!Array.isArray(items)) return 'answer has no items array'
    if (items.length > 50) return `limit ignored: ${items.length} items`
    if (items.some((item) => item.orchestrator_id !== orchestratorId))
      return 'filter ignored: other orchestrators'
    if (items.some((item, i) => i > 0 && item.seq <= items[i - 1]!.seq)) return 'items not in ascending seq'
    return `ok (${items.length} items${res.body.next_cursor ? ', more pages' : ''})`
  } catch (err) {
    return `failed: ${(err as Error).message.slice(0, 200)}`
  }
}
