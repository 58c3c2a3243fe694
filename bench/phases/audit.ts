import { hashAuditRecord } from '../../src/domain/shared/audit-chain.ts'
import {
  checkChainSeams,
  fillAuditLog,
  SYNTHETIC_ORCHESTRATORS,
  syntheticOrchestratorId,
} from '../audit-fill.ts'
import { cfg } from '../config.ts'
import { createDatabase, withClient } from '../database.ts'
import { type CannonResult, cannon, HttpTarget } from '../load.ts'
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
}

export interface AuditPhase {
  status: string
  records: EndpointState
  verify: EndpointState
  connections: number
  /** This process hashing the same kind of records with hashAuditRecord (no database, no HTTP). */
  hashReferencePerS: number
  levels: AuditLevel[]
}

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
      phase.levels.push(entry)
    }
    return phase
  } finally {
    await target.close()
    await arbiter.stop()
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
