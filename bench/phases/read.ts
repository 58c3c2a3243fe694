import { cfg } from '../config.ts'
import type { CannonResult } from '../load.ts'
import { cannon, runLoops } from '../load.ts'
import { baselineRows, type CpuFigures, cycler, log, measuredCannon, type Run } from '../run-context.ts'
import { decidePath } from '../workloads.ts'

/** Phase 2, read: GET /v1/manifests/{id} over the manifests issued so far vs GET /select. */
export interface ReadPhase {
  connections: number
  manifestsCycled: number
  rowsCycled: number
  baseline: CannonResult & { cpu: CpuFigures }
  arbiter: CannonResult & { cpu: CpuFigures }
  throughputRatio: number
  p99Ratio: number
}

export async function phaseRead(run: Run): Promise<ReadPhase> {
  if (run.manifestIds.length === 0) {
    log('read: no manifests yet, issuing some first')
    await runLoops({ loops: cfg.connections, durationMs: 2000 }, async (_loop, rec) => {
      const result = await decidePath(run.arbTarget, rec, {
        orchestrators: ['orch-a', 'orch-b'],
        creatorKey: run.keys.orchA,
        keyFor: (id) => (id === 'orch-a' ? run.keys.orchA : run.keys.orchB),
        evidence: run.evidence1k,
        expectAll: true,
        subagentId: 'refund-agent-0',
      })
      run.manifestIds.push(result.manifestId)
    })
  }
  const maxId = await baselineRows(run)
  const ids = Array.from({ length: maxId }, (_, i) => i + 1)
  const nextRow = cycler(ids)
  const nextManifest = cycler(run.manifestIds)
  const common = { connections: cfg.connections, durationS: cfg.durationS }
  log(`read: baseline GET /select over ${maxId} rows, ${cfg.connections} connections`)
  await cannon({
    ...common,
    durationS: cfg.warmupS,
    origin: run.baseline.origin,
    nextPath: () => `/select?id=${nextRow()}`,
  })
  const baseline = await measuredCannon(run.mainDb.name, run.baseline.proc.pid, {
    ...common,
    origin: run.baseline.origin,
    nextPath: () => `/select?id=${nextRow()}`,
  })
  log(`read: Arbiter GET /v1/manifests/{id} over ${run.manifestIds.length} manifests`)
  run.arbiter.memory.phase = 'read'
  const auth = { authorization: `Bearer ${run.keys.orchA}` }
  await cannon({
    ...common,
    durationS: cfg.warmupS,
    origin: run.arbiter.origin,
    headers: auth,
    nextPath: () => `/v1/manifests/${nextManifest()}`,
  })
  const arbiter = await measuredCannon(run.mainDb.name, run.arbiter.proc.pid, {
    ...common,
    origin: run.arbiter.origin,
    headers: auth,
    nextPath: () => `/v1/manifests/${nextManifest()}`,
  })
  return {
    connections: cfg.connections,
    manifestsCycled: run.manifestIds.length,
    rowsCycled: maxId,
    baseline,
    arbiter,
    throughputRatio: arbiter.requestsPerSecond / baseline.requestsPerSecond,
    p99Ratio: arbiter.latency.p99 / baseline.latency.p99,
  }
}
