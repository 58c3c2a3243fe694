import { mkdir, writeFile } from 'node:fs/promises'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { cfg, repoRoot, TARGETS } from './config.ts'
import { medianRound } from './decide-rounds.ts'
import type { LatencySummary } from './load.ts'
import type { AuditPhase } from './phases/audit.ts'
import type { DecidePhase } from './phases/decide.ts'
import type { EmbeddedPhase } from './phases/embedded.ts'
import { LARGE_BODY_TARGET_MS, type LargeBodiesPhase } from './phases/large-bodies.ts'
import type { ReadCondition, ReadPhase } from './phases/read.ts'
import type { ReconcilePhase } from './phases/reconcile.ts'
import type { ReviewPhase } from './phases/review.ts'
import type { ScalePhase } from './phases/scale.ts'
import type { WebhooksPhase } from './phases/webhooks.ts'
import { WORST_CASE_TARGETS, type WorstCasePhase } from './phases/worst-case.ts'
import { type CpuFigures, type LoopFigures, log, type Run } from './run-context.ts'

/** The report of a run: the tables on stdout and the figures of bench/results/latest.json. */

export interface Figure {
  figure: string
  arbiter: string
  baseline: string
  ratio: string
  target: string
  result: 'PASS' | 'MISS' | 'info' | 'skipped'
}

const ms = (value: number) => (Number.isNaN(value) ? '—' : value < 10 ? value.toFixed(2) : value.toFixed(1))
const rate = (value: number) => (value >= 10_000 ? `${(value / 1000).toFixed(1)}k` : value.toFixed(0))
const times = (value: number | null) => (value === null || Number.isNaN(value) ? '—' : `${value.toFixed(2)}×`)
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`
const kb = (bytes: number) =>
  bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : `${(bytes / 1024).toFixed(1)} KB`
const verdict = (pass: boolean): Figure['result'] => (pass ? 'PASS' : 'MISS')

export function printTable(title: string, headers: string[], rows: string[][]): void {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)),
  )
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd()
  process.stdout.write(`\n${title}\n${line(headers)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n`)
  for (const row of rows) process.stdout.write(`${line(row)}\n`)
}

export function buildFigures(results: {
  decide?: DecidePhase | undefined
  review?: ReviewPhase<LoopFigures> | undefined
  reconcile?: ReconcilePhase | undefined
  read?: ReadPhase | undefined
  audit?: AuditPhase | undefined
  embedded?: EmbeddedPhase | undefined
  largeBodies?: LargeBodiesPhase | undefined
  webhooks?: WebhooksPhase | undefined
  memory: MemoryReport
}): Figure[] {
  const figures: Figure[] = []
  const { decide, review, reconcile, read, audit, embedded, largeBodies, webhooks, memory } = results
  if (decide) {
    const failed = decide.rounds.reduce(
      (sum, round) => sum + round.arbiter.failedRequests + round.baseline.failedRequests,
      0,
    )
    const failNote = failed > 0 ? ` (${failed} failed requests)` : ''
    // Each row shows the round whose ratio is the median of its own figure, and says which.
    const of = (round: { round: number }) => `round ${round.round} of ${decide.rounds.length}`
    const throughputRound = medianRound(decide.rounds, (round) => round.throughputRatio)
    figures.push({
      figure: `decide throughput, req/s (${of(throughputRound)})${failNote}`,
      arbiter: rate(decide.arbiter.requestsPerSecond),
      baseline: rate(decide.baseline.requestsPerSecond),
      ratio: times(decide.throughputRatio),
      target: `≥ ${TARGETS.decideThroughputRatio.toFixed(2)}×`,
      result: verdict(failed === 0 && decide.throughputRatio >= TARGETS.decideThroughputRatio),
    })
    const p50Round = medianRound(decide.rounds, (round) => round.p50Ratio)
    const p99Round = medianRound(decide.rounds, (round) => round.p99Ratio)
    const cpuRound = medianRound(decide.rounds, (round) => round.serverCpuRatio)
    figures.push({
      figure: `decide latency p50, ms (every request; ${of(p50Round)})`,
      arbiter: ms(p50Round.arbiter.latency.p50),
      baseline: ms(p50Round.baseline.latency.p50),
      ratio: times(decide.p50Ratio),
      target: '',
      result: 'info',
    })
    figures.push({
      figure: `decide latency p99, ms (every request; ${of(p99Round)})`,
      arbiter: ms(p99Round.arbiter.latency.p99),
      baseline: ms(p99Round.baseline.latency.p99),
      ratio: times(decide.p99Ratio),
      target: `≤ ${TARGETS.decideP99Ratio.toFixed(2)}×`,
      result: verdict(decide.p99Ratio <= TARGETS.decideP99Ratio),
    })
    // Both CPU rows from the round with the median server CPU ratio.
    figures.push(...cpuRows(`decide (${of(cpuRound)})`, cpuRound.arbiter.cpu, cpuRound.baseline.cpu))
    const lag = decide.sequencingLag
    figures.push({
      figure: `sequencing lag p50 / p99 under decide, ms (${lag.lagMs.count} records, ±${lag.pollMs} ms poll)`,
      arbiter: `${ms(lag.lagMs.p50)} / ${ms(lag.lagMs.p99)}`,
      baseline: '',
      ratio: '',
      target: `p99 < ${TARGETS.sequencingLagP99Ms} ms`,
      result: verdict(lag.lagMs.count > 0 && lag.lagMs.p99 < TARGETS.sequencingLagP99Ms),
    })
    figures.push({
      figure: `  of it after the write's 2xx answer, p50 / p99, ms (${lag.acknowledgedRecords} records)`,
      arbiter: `${ms(lag.fromAcknowledgementMs.p50)} / ${ms(lag.fromAcknowledgementMs.p99)}`,
      baseline: '',
      ratio: '',
      target: '',
      result: 'info',
    })
    const pacedLag = decide.paced.sequencingLag
    figures.push({
      figure: `sequencing lag p50 / p99 at equal load (${decide.paced.requestsPerSecond} req/s), ms (${pacedLag.lagMs.count} records); after the 2xx answer`,
      arbiter: `${ms(pacedLag.lagMs.p50)} / ${ms(pacedLag.lagMs.p99)}; ${ms(pacedLag.fromAcknowledgementMs.p50)} / ${ms(pacedLag.fromAcknowledgementMs.p99)}`,
      baseline: '',
      ratio: '',
      target: '',
      result: 'info',
    })
    const paced = medianRound(decide.paced.rounds, (round) => round.serverCpuRatio)
    const pacedFailed = decide.paced.rounds.reduce(
      (sum, round) => sum + round.arbiter.failedRequests + round.baseline.failedRequests,
      0,
    )
    const pacedRows = cpuRows(
      `decide at equal load, both paced at ${decide.paced.requestsPerSecond} req/s (reached ${rate(paced.arbiter.requestsPerSecond)} / ${rate(paced.baseline.requestsPerSecond)}; ${of(paced)})${pacedFailed > 0 ? ` (${pacedFailed} failed requests)` : ''}`,
      paced.arbiter.cpu,
      paced.baseline.cpu,
      TARGETS.decideServerCpuRatio,
    )
    // Failed requests void the comparison, as they do the throughput's.
    if (pacedFailed > 0) pacedRows[0]!.result = verdict(false)
    figures.push(...pacedRows)
  }
  for (const [name, phase, target] of [
    ['review', review, TARGETS.reviewThroughputRatio],
    ['reconcile', reconcile, TARGETS.reconcileThroughputRatio],
  ] as const) {
    if (!phase) continue
    const failed = phase.arbiter.failedRequests + phase.baseline.failedRequests
    figures.push({
      figure: `${name} throughput, req/s${failed > 0 ? ` (${failed} failed requests)` : ''}`,
      arbiter: rate(phase.arbiter.requestsPerSecond),
      baseline: rate(phase.baseline.requestsPerSecond),
      ratio: times(phase.throughputRatio),
      target: `≥ ${target.toFixed(2)}×`,
      result: verdict(failed === 0 && phase.throughputRatio >= target),
    })
    figures.push({
      figure: `${name} latency p50 / p99, ms (every request)`,
      arbiter: `${ms(phase.arbiter.latency.p50)} / ${ms(phase.arbiter.latency.p99)}`,
      baseline: `${ms(phase.baseline.latency.p50)} / ${ms(phase.baseline.latency.p99)}`,
      ratio: times(phase.p99Ratio),
      target: '',
      result: 'info',
    })
  }
  if (reconcile) {
    const first = reconcile.scale[0]
    const last = reconcile.scale.at(-1)
    figures.push({
      figure: `reconcile growth, p50 ${first?.claims ?? '?'} → ${last?.claims ?? '?'} claims (exponent)`,
      arbiter: first && last ? `${ms(first.http.p50)} → ${ms(last.http.p50)} ms` : '—',
      baseline: '',
      ratio: reconcile.scaleExponent === null ? '—' : reconcile.scaleExponent.toFixed(2),
      target: `< ${TARGETS.reconcileScaleExponent}`,
      result: verdict(
        reconcile.scaleExponent !== null && reconcile.scaleExponent < TARGETS.reconcileScaleExponent,
      ),
    })
  }
  if (read) for (const condition of read.conditions) figures.push(...readRows(condition))
  if (audit) {
    const maxLevel = Math.max(...cfg.auditLevels)
    if (audit.records !== 'ok') {
      figures.push({
        figure: 'audit query p95 (orchestrator_id filter)',
        arbiter: audit.records === 'missing' ? 'skipped: endpoint missing' : `skipped: ${audit.records}`,
        baseline: '',
        ratio: '',
        target: `< ${TARGETS.auditQueryP95Ms} ms at 1M`,
        result: 'skipped',
      })
    }
    if (audit.verify !== 'ok') {
      figures.push({
        figure: 'audit verify, records/s',
        arbiter: audit.verify === 'missing' ? 'skipped: endpoint missing' : `skipped: ${audit.verify}`,
        baseline: '',
        ratio: '',
        target: `≥ ${rate(TARGETS.verifyRecordsPerS)}/s`,
        result: 'skipped',
      })
    }
    for (const level of audit.levels) {
      const atMax = level.records >= maxLevel
      const label =
        level.records >= 1_000_000 ? `${level.records / 1_000_000}M` : `${Math.round(level.records / 1000)}k`
      if (level.byOrchestrator && level.baselineSelect) {
        const q = level.byOrchestrator
        const bad = q.non2xx + q.errors
        figures.push({
          figure: `audit query p50 / p95 @ ${label}, ms${bad > 0 ? ` (${bad} non-2xx)` : ''}`,
          arbiter: `${ms(q.latency.p50)} / ${ms(q.latency.p95)}`,
          baseline: `${ms(level.baselineSelect.latency.p50)} / ${ms(level.baselineSelect.latency.p95)}`,
          ratio: times(level.p95Ratio),
          target: atMax ? `p95 < ${TARGETS.auditQueryP95Ms} ms` : '',
          result: atMax ? verdict(bad === 0 && q.latency.p95 < TARGETS.auditQueryP95Ms) : 'info',
        })
        if (atMax) figures.push(...cpuRows(`audit query @ ${label}`, q.cpu, level.baselineSelect.cpu))
      }
      if (level.byOrchestratorAndKind && level.baselineSelect) {
        const q = level.byOrchestratorAndKind
        figures.push({
          figure: `audit query +kind p50 / p95 @ ${label}, ms`,
          arbiter: `${ms(q.latency.p50)} / ${ms(q.latency.p95)}`,
          baseline: `${ms(level.baselineSelect.latency.p50)} / ${ms(level.baselineSelect.latency.p95)}`,
          ratio: times(q.latency.p95 / level.baselineSelect.latency.p95),
          target: '',
          result: 'info',
        })
      }
      if (level.proofs) {
        const p = level.proofs
        figures.push({
          figure: `proofs p50 / p95 @ ${label}, ms (inclusion, at size, consistency)`,
          arbiter: [p.inclusion, p.inclusionAtSize, p.consistency]
            .map((l) => `${ms(l.p50)}/${ms(l.p95)}`)
            .join('  '),
          baseline: '',
          ratio: '',
          target: atMax ? `p95 < ${TARGETS.proofP95Ms} ms` : '',
          result: atMax
            ? verdict(
                Math.max(p.inclusion.p95, p.inclusionAtSize.p95, p.consistency.p95) < TARGETS.proofP95Ms,
              )
            : 'info',
        })
      }
      if (audit.verify === 'ok') {
        const v = level.verify
        figures.push({
          figure: `audit verify @ ${label}, records/s${level.verifyNote ? ` (${level.verifyNote})` : ''}`,
          arbiter: v ? rate(v.recordsPerSecond) : '—',
          baseline: `${rate(audit.hashReferencePerS)} hash-only`,
          ratio: v ? times(v.recordsPerSecond / audit.hashReferencePerS) : '—',
          target: atMax ? `≥ ${rate(TARGETS.verifyRecordsPerS)}/s` : '',
          result: atMax ? verdict(v?.ok === true && v.recordsPerSecond >= TARGETS.verifyRecordsPerS) : 'info',
        })
      }
    }
  }
  if (audit?.checkpointSigning) {
    figures.push({
      figure: `checkpoint signing rate (${audit.checkpointSigning.checkpoints} signed and stored in a row)`,
      arbiter: `${rate(audit.checkpointSigning.perSecond)}/s`,
      baseline: '',
      ratio: '',
      target: '',
      result: 'info',
    })
  }
  if (largeBodies) {
    const size = `${(largeBodies.bodyBytes / 1024).toFixed(0)} KiB`
    figures.push({
      figure: `${largeBodies.bodiesPerBurst} bodies of ${size} at once: worst /healthz delay (p99), ms`,
      arbiter: `${ms(largeBodies.worstHealthzMs)} (${ms(largeBodies.burstHealthz.p99)})`,
      baseline: '',
      ratio: '',
      target: `≤ ${LARGE_BODY_TARGET_MS} ms`,
      result: largeBodies.result === 'PASS' ? 'PASS' : 'MISS',
    })
    figures.push({
      figure: `the same: each ${size} body answered, p50 / max, ms`,
      arbiter: `${ms(largeBodies.bodyLatency.p50)} / ${ms(largeBodies.bodyLatency.max)}`,
      baseline: '',
      ratio: '',
      target: '',
      result: 'info',
    })
  }
  if (webhooks) {
    const failed =
      webhooks.rounds.length === 0 ? 0 : webhooks.none.failedRequests + webhooks.three.failedRequests
    figures.push({
      figure: `decide with 3 webhooks on every event vs none, req/s (median of ${webhooks.rounds.length} rounds)`,
      arbiter: rate(webhooks.three.requestsPerSecond),
      baseline: `${rate(webhooks.none.requestsPerSecond)} (none)`,
      ratio: times(webhooks.throughputRatio),
      target: `≥ ${TARGETS.webhooksThroughputRatio.toFixed(2)}×`,
      result: verdict(failed === 0 && webhooks.throughputRatio >= TARGETS.webhooksThroughputRatio),
    })
    figures.push({
      figure: `webhook delivery lag under the decide load (evaluate answered → received), p50 / p99, ms`,
      arbiter: `${ms(webhooks.lag.p50)} / ${ms(webhooks.lag.p99)}`,
      baseline: '',
      ratio: '',
      target: '',
      result: 'info',
    })
    figures.push({
      figure: `webhook catch-up after a receiver outage of ${webhooks.catchUp.events} events, deliveries/s`,
      arbiter: rate(webhooks.catchUp.perSecond),
      baseline: '',
      ratio: '',
      target: '',
      result: 'info',
    })
  }
  if (embedded) {
    const e = embedded.embedded
    const p = embedded.postgres
    const failed = e.non2xx + e.errors + p.non2xx + p.errors
    figures.push({
      figure: `embedded decide flow, req/s (vs PostgreSQL mode)${failed > 0 ? ` (${failed} failed)` : ''}`,
      arbiter: rate(e.requestsPerSecond),
      baseline: rate(p.requestsPerSecond),
      ratio: times(embedded.throughputRatio),
      target: `≥ ${TARGETS.embeddedThroughputRatio.toFixed(2)}×`,
      result: verdict(failed === 0 && embedded.throughputRatio >= TARGETS.embeddedThroughputRatio),
    })
    figures.push({
      figure: 'embedded decide latency p50 / p99, ms',
      arbiter: `${ms(e.latency.p50)} / ${ms(e.latency.p99)}`,
      baseline: `${ms(p.latency.p50)} / ${ms(p.latency.p99)}`,
      ratio: times(e.latency.p99 / p.latency.p99),
      target: '',
      result: 'info',
    })
    if (e.firstStartReadyMs !== null && e.createPeakBytes !== null) {
      figures.push({
        figure: 'embedded first start (empty data dir): time to ready / peak RSS',
        arbiter: `${(e.firstStartReadyMs / 1000).toFixed(1)} s / ${mb(e.createPeakBytes)}`,
        baseline: '',
        ratio: '',
        target: `< ${TARGETS.embeddedFirstStartMs / 1000} s / < ${mb(TARGETS.embeddedFirstStartRssBytes)}`,
        result: verdict(
          e.firstStartReadyMs < TARGETS.embeddedFirstStartMs &&
            e.createPeakBytes < TARGETS.embeddedFirstStartRssBytes,
        ),
      })
    }
    figures.push({
      figure: 'embedded restart (existing data dir): time to ready / peak RSS until ready',
      arbiter: `${(e.startReadyMs / 1000).toFixed(1)} s / ${mb(e.startPeakBytes)}`,
      baseline: `${(p.startReadyMs / 1000).toFixed(1)} s / ${mb(p.startPeakBytes)}`,
      ratio: '',
      target: '',
      result: 'info',
    })
    const peak = Math.max(e.startPeakBytes, e.loadPeakBytes)
    const postgresPeak = Math.max(p.startPeakBytes, p.loadPeakBytes)
    figures.push({
      figure: `embedded peak RSS, start and load (first start creating it: ${e.createPeakBytes === null ? '—' : mb(e.createPeakBytes)})`,
      arbiter: mb(peak),
      baseline: mb(postgresPeak),
      ratio: times(peak / postgresPeak),
      target: `< ${mb(TARGETS.embeddedRssBytes)}`,
      result: verdict(peak < TARGETS.embeddedRssBytes),
    })
  }
  for (const instance of memory.instances) figures.push(...peakRssRows(instance, memory.baselinePeakBytes))
  return figures
}

/** The worst-case phase's memory labels (`worst-case: cases`, …). */
const isWorstCase = (phase: string) => phase.startsWith('worst-case')

/**
 * An instance's peak RSS against the general target, over every phase but worst-case, naming the phase it came
 * in; and, when the instance ran the worst-case phase, that phase's peak against its own target (the worst case
 * the limits allow is allowed more memory; its own section has the detail).
 */
export function peakRssRows(
  instance: MemoryReport['instances'][number],
  baselinePeakBytes: number,
): Figure[] {
  const highest = (phases: [string, number][]) =>
    phases.reduce<[string, number] | null>((top, entry) => (top && top[1] >= entry[1] ? top : entry), null)
  const phases = Object.entries(instance.byPhase)
  const general = highest(phases.filter(([phase]) => !isWorstCase(phase)))
  const worst = highest(phases.filter(([phase]) => isWorstCase(phase)))
  // Without a worst-case phase, the process's high-water mark is the general peak, spikes between polls included.
  const generalBytes = worst ? (general?.[1] ?? 0) : Math.max(general?.[1] ?? 0, instance.peakBytes)
  const rows: Figure[] = [
    {
      figure: `peak RSS, ${instance.name}${worst ? ', phases other than worst-case' : ''} (during ${general?.[0] ?? '—'}${instance.hwmByPhase ? '' : '; polled'})`,
      arbiter: mb(generalBytes),
      baseline: baselinePeakBytes ? mb(baselinePeakBytes) : '—',
      ratio: baselinePeakBytes ? times(generalBytes / baselinePeakBytes) : '—',
      target: `< ${mb(TARGETS.rssBytes)}`,
      result: verdict(generalBytes < TARGETS.rssBytes),
    },
  ]
  if (worst) {
    rows.push({
      figure: `peak RSS, ${instance.name}, worst-case phase, its own target (during ${worst[0]})`,
      arbiter: mb(worst[1]),
      baseline: '',
      ratio: '',
      target: `< ${mb(WORST_CASE_TARGETS.peakRssBytes)}`,
      result: verdict(worst[1] < WORST_CASE_TARGETS.peakRssBytes),
    })
  }
  return rows
}

/** A read condition's rows: each from the round with the median of its own ratio, as decide's. */
function readRows(condition: ReadCondition): Figure[] {
  const { rounds, answers } = condition
  const of = (round: { round: number }) => `round ${round.round} of ${rounds.length}`
  const failed = rounds.reduce(
    (sum, r) => sum + r.arbiter.non2xx + r.arbiter.errors + r.baseline.non2xx + r.baseline.errors,
    0,
  )
  const wrong = answers.arbiter.wrong + answers.baseline.wrong
  const notes = [
    failed > 0 ? `${failed} non-2xx/errors` : '',
    wrong > 0
      ? `${wrong} wrong answers of ${answers.arbiter.checked + answers.baseline.checked} checked`
      : '',
  ].filter(Boolean)
  const name = `read, logging ${condition.logging}`
  const throughput = medianRound(rounds, (r) => r.throughputRatio)
  const p99 = medianRound(rounds, (r) => r.p99Ratio)
  const cpu = medianRound(rounds, (r) => r.serverCpuRatio)
  const paced = medianRound(condition.paced.rounds, (r) => r.serverCpuRatio)
  const pacedFailed = condition.paced.rounds.reduce(
    (sum, r) => sum + r.arbiter.failedRequests + r.baseline.failedRequests,
    0,
  )
  const rows: Figure[] = [
    {
      figure: `${name}: throughput, req/s (${of(throughput)})${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`,
      arbiter: rate(throughput.arbiter.requestsPerSecond),
      baseline: rate(throughput.baseline.requestsPerSecond),
      ratio: times(condition.throughputRatio),
      target: `≥ ${TARGETS.readThroughputRatio.toFixed(2)}×`,
      result: verdict(
        failed === 0 && wrong === 0 && condition.throughputRatio >= TARGETS.readThroughputRatio,
      ),
    },
    {
      figure: `${name}: latency p50 / p99, ms (${of(p99)})`,
      arbiter: `${ms(p99.arbiter.latency.p50)} / ${ms(p99.arbiter.latency.p99)}`,
      baseline: `${ms(p99.baseline.latency.p50)} / ${ms(p99.baseline.latency.p99)}`,
      ratio: times(condition.p99Ratio),
      target: '',
      result: 'info',
    },
    {
      figure: `${name}: answers checked (one in ${answers.arbiter.every}), wrong`,
      arbiter: `${answers.arbiter.checked}, ${answers.arbiter.wrong}`,
      baseline: `${answers.baseline.checked}, ${answers.baseline.wrong}`,
      ratio: '',
      target: 'none wrong',
      result: verdict(wrong === 0 && answers.arbiter.checked > 0 && answers.baseline.checked > 0),
    },
    ...cpuRows(`${name}, each at its maximum (${of(cpu)})`, cpu.arbiter.cpu, cpu.baseline.cpu),
    ...cpuRows(
      `${name}, equal load, both paced at ${condition.paced.requestsPerSecond} req/s (reached ${rate(paced.arbiter.requestsPerSecond)} / ${rate(paced.baseline.requestsPerSecond)}; ${of(paced)})${pacedFailed > 0 ? ` (${pacedFailed} failed requests)` : ''}`,
      paced.arbiter.cpu,
      paced.baseline.cpu,
    ),
  ]
  const logs = condition.logs
  if (logs) {
    const perRequest = (v: { lines: number; bytes: number; requests: number }) =>
      `${(v.lines / v.requests).toFixed(2)} lines, ${(v.bytes / v.requests).toFixed(0)} B`
    rows.push({
      figure: `${name}: log written per request answered (${condition.setup.destination})`,
      arbiter: perRequest(logs.arbiter),
      baseline: perRequest(logs.baseline),
      ratio: '',
      target: '',
      result: 'info',
    })
  }
  return rows
}

function cpuRows(phase: string, arbiter: CpuFigures, baseline: CpuFigures, serverTarget?: number): Figure[] {
  const serverRatio = arbiter.serverMsPerRequest / baseline.serverMsPerRequest
  const cell = (msPerRequest: number, cores: number) => `${ms(msPerRequest)} (${cores.toFixed(2)} cores)`
  const server = (cpu: CpuFigures) =>
    `${ms(cpu.serverMsPerRequest)} (kernel ${ms(cpu.serverSystemMsPerRequest)}; ${cpu.serverCores.toFixed(2)} cores)`
  return [
    {
      figure: `${phase} server CPU per request (of it in the kernel), ms`,
      arbiter: server(arbiter),
      baseline: server(baseline),
      ratio: times(serverRatio),
      target: serverTarget === undefined ? '' : `≤ ${serverTarget.toFixed(2)}×`,
      result: serverTarget === undefined ? 'info' : verdict(serverRatio <= serverTarget),
    },
    {
      figure: `${phase} PostgreSQL CPU per request, ms`,
      arbiter: cell(arbiter.postgresMsPerRequest, arbiter.postgresCores),
      baseline: cell(baseline.postgresMsPerRequest, baseline.postgresCores),
      ratio: times(arbiter.postgresMsPerRequest / baseline.postgresMsPerRequest),
      target: '',
      result: 'info',
    },
  ]
}

export interface MemoryReport {
  instances: {
    name: string
    peakBytes: number
    peakPolledRssBytes: number
    hwmBytes: number
    /** Whether each phase's peak includes its own high-water mark (false: polled every 200 ms only). */
    hwmByPhase: boolean
    peakPhase: string
    samples: number
    /** Highest polled RSS in each phase, bytes. */
    byPhase: Record<string, number>
    /** Highest V8 heap total / used and external memory in each phase, bytes (from /metrics, once a second). */
    heapByPhase: Record<string, { heapTotal: number; heapUsed: number; external: number }>
  }[]
  baselinePeakBytes: number
}

export function memoryReport(run: Run): MemoryReport {
  return {
    instances: run.memories.map(({ name, sampler }) => ({
      name,
      peakBytes: sampler.peakBytes,
      peakPolledRssBytes: sampler.peakRssBytes,
      hwmBytes: sampler.hwmBytes,
      hwmByPhase: sampler.hwmByPhase,
      peakPhase: sampler.peakPhase,
      samples: sampler.samples,
      byPhase: Object.fromEntries(sampler.phasePeaks),
      heapByPhase: Object.fromEntries(sampler.heapPeaks),
    })),
    baselinePeakBytes: run.baselineMemory.peakBytes,
  }
}

export function printScale(scale: ScalePhase): void {
  const first = scale.interpretations[0]
  printTable(
    `Scale: interpretations per outcome (1 KB evidence, admin key, ${scale.loops} loops; path = create + N interpretations + evaluate; ratio = path p50 / the 2-orchestrator point)`,
    [
      'orchestrators',
      'outcomes',
      'evaluate p50',
      'evaluate p99',
      'path p50',
      'path p99',
      'manifest',
      'ratio',
      'failed',
    ],
    scale.interpretations.map((p) => [
      String(p.orchestrators),
      String(p.iterations),
      ms(p.evaluate.p50),
      ms(p.evaluate.p99),
      ms(p.path.p50),
      ms(p.path.p99),
      kb(p.manifestBytes),
      first ? times(p.path.p50 / first.path.p50) : '—',
      String(p.failedIterations),
    ]),
  )
  const base = scale.evidence[0]
  printTable(
    `Scale: evidence content size (2 interpretations, ${scale.loops} loops; ratio = path p50 / the 1 KB point)`,
    [
      'evidence',
      'outcomes',
      'create p50',
      'create p99',
      'evaluate p50',
      'evaluate p99',
      'path p50',
      'path p99',
      'ratio',
      'failed',
    ],
    scale.evidence.map((p) => [
      kb(p.evidenceContentBytes),
      String(p.iterations),
      ms(p.create.p50),
      ms(p.create.p99),
      ms(p.evaluate.p50),
      ms(p.evaluate.p99),
      ms(p.path.p50),
      ms(p.path.p99),
      base ? times(p.path.p50 / base.path.p50) : '—',
      String(p.failedIterations),
    ]),
  )
  for (const p of [...scale.interpretations, ...scale.evidence]) {
    if (p.failureExamples.length > 0)
      log(`scale failures (${p.orchestrators} orch, ${kb(p.evidenceContentBytes)}): ${p.failureExamples[0]}`)
  }
}

export function printMemory(memory: MemoryReport): void {
  const rows: string[][] = []
  for (const instance of memory.instances) {
    for (const [phase, rss] of Object.entries(instance.byPhase)) {
      const heap = instance.heapByPhase[phase]
      rows.push([
        `${instance.name}: ${phase}`,
        mb(rss),
        heap ? mb(heap.heapTotal) : '—',
        heap ? mb(heap.heapUsed) : '—',
        heap ? mb(heap.external) : '—',
      ])
    }
  }
  printTable(
    `Memory by phase (RSS polled every 200 ms; V8 heap from /metrics once a second; baseline server peak ${mb(memory.baselinePeakBytes)})`,
    ['process: phase', 'peak RSS', 'heap total', 'heap used', 'external'],
    rows,
  )
}

export function printDecideDetail(decide: DecidePhase): void {
  const a = decide.arbiter.byCall
  const row = (name: string, s: LatencySummary | undefined) => [
    name,
    String(s?.count ?? 0),
    ms(s?.p50 ?? Number.NaN),
    ms(s?.p95 ?? Number.NaN),
    ms(s?.p99 ?? Number.NaN),
    ms(s?.max ?? Number.NaN),
  ]
  printTable(
    `Decide detail, the round with the median throughput ratio (${decide.loops} loops each side; baseline ${decide.baseline.iterations} × POST /insert3, Arbiter ${decide.arbiter.iterations} outcomes decided)`,
    ['call', 'count', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms'],
    [
      row('baseline POST /insert3', decide.baseline.byCall.insert3),
      row('POST /v1/outcomes', a.create),
      row('POST …/interpretations', a.interpret),
      row('POST …/evaluate', a.evaluate),
      row('whole 4-call path', a.path),
    ],
  )
  for (const round of decide.rounds)
    for (const example of [...round.baseline.failureExamples, ...round.arbiter.failureExamples])
      log(`decide failure: ${example}`)
}

/** What one run measured, for bench/results/latest.json. */
export interface RunResults {
  startedAt: Date
  git: { commit: string | null; srcModified: boolean | null }
  totalS: number
  postgres: string | null
  figures: Figure[]
  decide: DecidePhase | undefined
  review: ReviewPhase<LoopFigures> | undefined
  reconcile: ReconcilePhase | undefined
  read: ReadPhase | undefined
  scale: ScalePhase | undefined
  audit: AuditPhase | undefined
  embedded: EmbeddedPhase | undefined
  largeBodies: LargeBodiesPhase | undefined
  worstCase: WorstCasePhase | undefined
  webhooks: WebhooksPhase | undefined
  memory: MemoryReport
}

function readCondition(read: ReadPhase | undefined, logging: ReadCondition['logging']) {
  return read?.conditions.find((condition) => condition.logging === logging)
}

/** Writes bench/results/latest.json: every figure, the ratios, the configuration and where it ran. */
export async function writeResults(run: RunResults): Promise<void> {
  const results = {
    schema: 1,
    date: run.startedAt.toISOString(),
    commit: run.git.commit,
    src_modified: run.git.srcModified,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model ?? null,
    postgres: run.postgres,
    config: {
      duration_s: cfg.durationS,
      warmup_s: cfg.warmupS,
      decide_warmup_s: cfg.decideWarmupS,
      scale_s: cfg.scaleS,
      audit_s: cfg.auditS,
      connections: cfg.connections,
      scale_loops: cfg.scaleLoops,
      audit_connections: cfg.auditConnections,
      pool_max: cfg.poolMax,
      audit_levels: cfg.auditLevels,
      phases: [...cfg.phases],
      db_settings: cfg.dbSettings,
      arbiter_root: cfg.arbiterRoot === repoRoot ? null : cfg.arbiterRoot,
      cpu_profiles: cfg.cpuProfileDir ?? null,
    },
    total_s: run.totalS,
    targets: TARGETS,
    ratios: {
      decide_throughput: run.decide?.throughputRatio ?? null,
      decide_p50: run.decide?.p50Ratio ?? null,
      decide_p99: run.decide?.p99Ratio ?? null,
      decide_server_cpu: run.decide?.serverCpuRatio ?? null,
      decide_server_cpu_equal_load: run.decide?.paced.serverCpuRatio ?? null,
      read_throughput: readCondition(run.read, 'off')?.throughputRatio ?? null,
      read_p99: readCondition(run.read, 'off')?.p99Ratio ?? null,
      read_server_cpu_equal_load: readCondition(run.read, 'off')?.paced.serverCpuRatio ?? null,
      read_logging_on_throughput: readCondition(run.read, 'on')?.throughputRatio ?? null,
      read_logging_on_p99: readCondition(run.read, 'on')?.p99Ratio ?? null,
      read_logging_on_server_cpu_equal_load: readCondition(run.read, 'on')?.paced.serverCpuRatio ?? null,
      review_throughput: run.review?.throughputRatio ?? null,
      reconcile_throughput: run.reconcile?.throughputRatio ?? null,
      reconcile_scale_exponent: run.reconcile?.scaleExponent ?? null,
      embedded_throughput: run.embedded?.throughputRatio ?? null,
      webhooks_throughput: run.webhooks?.throughputRatio ?? null,
    },
    figures: run.figures,
    decide: run.decide ?? null,
    review: run.review ?? null,
    reconcile: run.reconcile ?? null,
    read: run.read ?? null,
    scale: run.scale ?? null,
    audit: run.audit ?? null,
    embedded: run.embedded ?? null,
    large_bodies: run.largeBodies ?? null,
    worst_case: run.worstCase ?? null,
    webhooks: run.webhooks ?? null,
    memory: run.memory,
  }
  const out = join(repoRoot, 'bench', 'results', 'latest.json')
  await mkdir(dirname(out), { recursive: true })
  await writeFile(out, `${JSON.stringify(results, null, 2)}\n`)
}
