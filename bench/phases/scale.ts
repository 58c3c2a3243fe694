import { cfg, SCALE_EVIDENCE_BYTES, SCALE_ORCHESTRATORS } from '../config.ts'
import { type LatencySummary, runLoops } from '../load.ts'
import { log, type Run } from '../run-context.ts'
import { decidePath, type EvidenceItem, makeEvidence } from '../workloads.ts'

/**
 * Phase 3, scale curves (Arbiter only; each point is compared with the curve's first point of this run): decide
 * latency as interpretations per outcome and evidence size grow.
 */
export interface ScalePoint {
  orchestrators: number
  evidenceContentBytes: number
  iterations: number
  failedIterations: number
  failureExamples: string[]
  create: LatencySummary
  interpret: LatencySummary
  evaluate: LatencySummary
  path: LatencySummary
  /** Size of the evaluate response (the manifest envelope). */
  manifestBytes: number
}

export interface ScalePhase {
  loops: number
  minIterations: number
  interpretations: ScalePoint[]
  evidence: ScalePoint[]
}

async function scalePoint(run: Run, orchestrators: number, evidence: EvidenceItem[], contentBytes: number) {
  const ids = Array.from({ length: orchestrators }, (_, i) => `orch-${String(i).padStart(3, '0')}`)
  let manifestBytes = 0
  let manifests = 0
  const minIterations = 20
  const result = await runLoops(
    {
      loops: cfg.scaleLoops,
      durationMs: cfg.scaleS * 1000,
      minIterations,
      maxDurationMs: cfg.scaleS * 4000,
    },
    async (loop, rec) => {
      const decided = await decidePath(run.arbTarget, rec, {
        orchestrators: ids,
        creatorKey: run.keys.admin,
        keyFor: () => run.keys.admin,
        evidence,
        expectAll: false,
        subagentId: `scale-agent-${loop}`,
      })
      manifestBytes += decided.manifestBytes
      manifests += 1
    },
  )
  const point: ScalePoint = {
    orchestrators,
    evidenceContentBytes: contentBytes,
    iterations: result.iterations,
    failedIterations: result.rec.failedIterations,
    failureExamples: result.rec.failureExamples,
    create: result.rec.summary('create'),
    interpret: result.rec.summary('interpret'),
    evaluate: result.rec.summary('evaluate'),
    path: result.rec.summary('path'),
    manifestBytes: manifests > 0 ? manifestBytes / manifests : 0,
  }
  return { point, minIterations }
}

export async function phaseScale(run: Run): Promise<ScalePhase> {
  const phase: ScalePhase = { loops: cfg.scaleLoops, minIterations: 0, interpretations: [], evidence: [] }
  for (const orchestrators of SCALE_ORCHESTRATORS) {
    log(`scale: ${orchestrators} interpretations per outcome, ${cfg.scaleLoops} loops, ≥${cfg.scaleS}s`)
    run.arbiter.memory.phase = `scale ${orchestrators} interpretations`
    const { point, minIterations } = await scalePoint(run, orchestrators, run.evidence1k, 1024)
    phase.minIterations = minIterations
    phase.interpretations.push(point)
  }
  for (const bytes of SCALE_EVIDENCE_BYTES) {
    log(
      `scale: evidence content ${bytes / 1024} KB, 2 interpretations, ${cfg.scaleLoops} loops, ≥${cfg.scaleS}s`,
    )
    run.arbiter.memory.phase = `scale evidence ${bytes / 1024} KB`
    const evidence = bytes === 1024 ? run.evidence1k : makeEvidence(bytes)
    phase.evidence.push((await scalePoint(run, 2, evidence, bytes)).point)
  }
  return phase
}
