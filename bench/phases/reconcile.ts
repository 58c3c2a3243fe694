import type { SubmittedClaim, SubtaskResult } from '../../src/domain/fanout/claims.ts'
import { reconcile } from '../../src/domain/fanout/reconcile.ts'
import { withPolicyDefaults } from '../../src/domain/fanout/vocabulary.ts'
import { type HttpTarget, type LatencySummary, type Recorder, runLoops, summarize } from '../load.ts'
import type { LoopFigures } from '../run-context.ts'

/**
 * The reconcile phase: what fan-outs cost.
 *
 * 1. Throughput, like the decide path: 16 concurrent clients each create a fan-out of 20 subtasks over 10 facts,
 *    fill it (20 results of 5 claims each: 10 claims per fact, a few positions, shared sources that echo) and
 *    reconcile it — 22 requests per fan-out, each counted — against the baseline's POST /insert3, measured right
 *    before with the same loops and duration.
 * 2. A scale curve: one reconcile of one fact carrying 10, 100 and 1,000 claims (over 5 values, each claim citing
 *    its own source and every tenth a shared one), timed over HTTP (the whole request: load, reconcile, sign,
 *    store) and in-process (the pure `reconcile` alone). Only the pairwise `conflicts` list is quadratic, in
 *    distinct positions, so the time should grow about linearly with the claims.
 */

const SUBTASKS = 20
const FACTS = 10
const CLAIMS_PER_RESULT = 5
const SCALE_CLAIMS = [10, 100, 1000]
const SCALE_REPEATS = 5
/** Claims per result in the scale curve (the results' own bound is 1,000). */
const SCALE_CLAIMS_PER_RESULT = 100
const SCALE_VALUES = 5

export interface ReconcileContext {
  arbTarget: HttpTarget
  baseTarget: HttpTarget
  /** An orchestrator key for `bench-scout`, the owner of every fan-out. */
  key: string
  insert3Body: string
  loops: number
  warmupS: number
  durationS: number
  /** runLoops with the server's and PostgreSQL's CPU over the same window (bench/run.ts). */
  measure: (
    side: 'baseline' | 'arbiter',
    options: Parameters<typeof runLoops>[0],
    iteration: Parameters<typeof runLoops>[1],
  ) => Promise<LoopFigures>
  log: (message: string) => void
}

export interface ReconcileScalePoint {
  claims: number
  positions: number
  repeats: number
  /** POST …/reconcile, the first (deciding) call, over HTTP. */
  http: LatencySummary
  /** The pure reconciliation of the same results in this process. */
  inProcess: LatencySummary
  manifestBytes: number
}

export interface ReconcilePhase {
  loops: number
  requestsPerFanout: number
  baseline: LoopFigures
  arbiter: LoopFigures
  throughputRatio: number
  p50Ratio: number
  p99Ratio: number
  scale: ReconcileScalePoint[]
  /** log(t(1000) / t(10)) / log(100) for the HTTP p50: 1 is linear, 2 quadratic. */
  scaleExponent: number | null
}

let fanoutCounter = 0
const keyPrefix = `bench-${process.pid}-${Date.now().toString(36)}`
const factKey = (i: number) => `market.fact.${i}`

/** 20 subtasks, subtask i owning fact i mod 10 (two owners per fact: the decomposition reports overlaps). */
function throughputFanout() {
  return {
    orchestrator_id: 'bench-scout',
    fanout_key: `${keyPrefix}-${++fanoutCounter}`,
    question: 'What did the market look like last quarter?',
    facts: Array.from({ length: FACTS }, (_, i) => factKey(i)),
    subtasks: Array.from({ length: SUBTASKS }, (_, i) => ({
      subtask_id: `st_${i}`,
      scope: `source family ${i}`,
      facts: [factKey(i % FACTS)],
    })),
    policy: {
      resolve: ['corroboration', 'source_priority', 'highest_confidence'],
      source_priority: ['https://primary.example/'],
    },
  }
}

/**
 * Subtask i claims facts i … i+4 (mod 10): mostly the same value, sometimes another, with its own source and,
 * for every other claim, a shared source another subtask also cites (an echo).
 */
function throughputResult(i: number) {
  return {
    subtask_id: `st_${i}`,
    status: 'DONE',
    summary: `subtask ${i} read its sources`,
    evidence: [`notes of subtask ${i}`],
    claims: Array.from({ length: CLAIMS_PER_RESULT }, (_, k) => ({
      fact: factKey((i + k) % FACTS),
      value: { amount: (i + k) % 7 === 0 ? 120 : 100, currency: 'USD' },
      effective_date: '2026-01-01',
      confidence: 0.5 + ((i * 7 + k) % 5) / 10,
      sources: [
        { uri: `https://site${i}.example/report/${k}`, observed_at: '2026-02-01T00:00:00Z' },
        ...(k % 2 === 0 ? [{ uri: `https://primary.example/release/${(i + k) % FACTS}` }] : []),
      ],
    })),
  }
}

/** One unit of work: create, fill, reconcile (22 requests). */
async function fanoutPath(target: HttpTarget, rec: Recorder, key: string): Promise<void> {
  const started = performance.now()
  const created = await target.call<{ fanout_id: string }>(rec, 'POST', '/v1/fanouts', {
    key,
    label: 'create',
    expect: [201],
    body: throughputFanout(),
  })
  const id = created.body.fanout_id
  for (let i = 0; i < SUBTASKS; i++) {
    await target.call(rec, 'POST', `/v1/fanouts/${id}/results`, {
      key,
      label: 'result',
      expect: [201],
      body: throughputResult(i),
    })
  }
  await target.call(rec, 'POST', `/v1/fanouts/${id}/reconcile`, {
    key,
    label: 'reconcile',
    expect: [200],
    body: {},
  })
  rec.add('path', performance.now() - started, false)
}

/** `claims` claims on one fact over 5 values, in results of 100 claims, one subtask each. */
function scaleResults(claims: number) {
  const subtasks = Math.ceil(claims / SCALE_CLAIMS_PER_RESULT)
  return Array.from({ length: subtasks }, (_, s) => {
    const count = Math.min(SCALE_CLAIMS_PER_RESULT, claims - s * SCALE_CLAIMS_PER_RESULT)
    const resultClaims: SubmittedClaim[] = Array.from({ length: count }, (_, k) => {
      const n = s * SCALE_CLAIMS_PER_RESULT + k
      return {
        fact: factKey(0),
        value: { amount: 100 + (n % SCALE_VALUES) },
        confidence: (n % 10) / 10,
        sources: [
          { uri: `https://site${n}.example/page` },
          ...(n % 10 === 0 ? [{ uri: `https://shared.example/${n % 30}` }] : []),
        ],
      }
    })
    return {
      subtask_id: `st_${s}`,
      status: 'DONE' as const,
      summary: `subtask ${s}`,
      evidence: ['e'],
      claims: resultClaims,
    }
  })
}

async function scalePoint(ctx: ReconcileContext, claims: number): Promise<ReconcileScalePoint> {
  const results = scaleResults(claims)
  const policy = {
    resolve: ['corroboration', 'highest_confidence'] as ('corroboration' | 'highest_confidence')[],
  }
  const http: number[] = []
  const inProcess: number[] = []
  let manifestBytes = 0
  let positions = 0
  for (let r = 0; r < SCALE_REPEATS; r++) {
    const created = await ctx.arbTarget.call<{ fanout_id: string }>(null, 'POST', '/v1/fanouts', {
      key: ctx.key,
      label: 'create',
      expect: [201],
      body: {
        orchestrator_id: 'bench-scout',
        fanout_key: `${keyPrefix}-scale-${claims}-${r}`,
        question: 'How large is one fact?',
        facts: [factKey(0)],
        subtasks: results.map((result) => ({ subtask_id: result.subtask_id, facts: [factKey(0)] })),
        policy,
      },
    })
    const id = created.body.fanout_id
    for (const result of results) {
      await ctx.arbTarget.call(null, 'POST', `/v1/fanouts/${id}/results`, {
        key: ctx.key,
        label: 'result',
        expect: [201],
        body: result,
      })
    }
    const started = performance.now()
    const reconciled = await ctx.arbTarget.call<{ manifest: { facts: { positions: unknown[] }[] } }>(
      null,
      'POST',
      `/v1/fanouts/${id}/reconcile`,
      { key: ctx.key, label: 'reconcile', expect: [200], body: {} },
    )
    http.push(performance.now() - started)
    manifestBytes = reconciled.bytes
    positions = reconciled.body.manifest.facts[0]?.positions.length ?? 0

    const stored: SubtaskResult[] = results.map((result) => ({
      subtask_id: result.subtask_id,
      revision: 1,
      status: 'DONE',
      late: false,
      received_at: '2026-01-01T00:00:00.000Z',
      result_digest: `sha256:${'0'.repeat(64)}`,
      claims: result.claims,
      blocking_question: null,
      blocking_reason: null,
      concerns: [],
    }))
    const subtasks = results.map((result) => ({ subtask_id: result.subtask_id, facts: [factKey(0)] }))
    const input = {
      fanout: { facts: [factKey(0)], subtasks, policy: withPolicyDefaults(policy) },
      results: stored,
      deadline_passed: false,
      closed: false,
    }
    // Warmed up first, like the server's code path is by the time it is timed.
    if (r === 0) reconcile(input)
    const pureStarted = performance.now()
    reconcile(input)
    inProcess.push(performance.now() - pureStarted)
  }
  return {
    claims,
    positions,
    repeats: SCALE_REPEATS,
    http: summarize(http),
    inProcess: summarize(inProcess),
    manifestBytes,
  }
}

export async function phaseReconcile(ctx: ReconcileContext): Promise<ReconcilePhase> {
  const loops = ctx.loops
  const insert3 = async (_loop: number, rec: Recorder) => {
    await ctx.baseTarget.call(rec, 'POST', '/insert3', {
      body: ctx.insert3Body,
      expect: [201],
      label: 'insert3',
    })
  }
  const fanouts = (_loop: number, rec: Recorder) => fanoutPath(ctx.arbTarget, rec, ctx.key)
  ctx.log(`reconcile: baseline POST /insert3, ${loops} loops, ${ctx.warmupS}s warm-up + ${ctx.durationS}s`)
  await runLoops({ loops, durationMs: ctx.warmupS * 1000 }, insert3)
  const baseline = await ctx.measure('baseline', { loops, durationMs: ctx.durationS * 1000 }, insert3)
  ctx.log(
    `reconcile: Arbiter create + ${SUBTASKS} results + reconcile, ${loops} loops, ${ctx.warmupS}s warm-up + ${ctx.durationS}s`,
  )
  await runLoops({ loops, durationMs: ctx.warmupS * 1000 }, fanouts)
  const arbiter = await ctx.measure('arbiter', { loops, durationMs: ctx.durationS * 1000 }, fanouts)

  const scale: ReconcileScalePoint[] = []
  for (const claims of SCALE_CLAIMS) {
    ctx.log(`reconcile scale: one fact with ${claims} claims, ${SCALE_REPEATS} fan-outs`)
    scale.push(await scalePoint(ctx, claims))
  }
  const first = scale[0]
  const last = scale[scale.length - 1]
  const scaleExponent =
    first && last && last.claims > first.claims
      ? Math.log(last.http.p50 / first.http.p50) / Math.log(last.claims / first.claims)
      : null
  return {
    loops,
    requestsPerFanout: SUBTASKS + 2,
    baseline,
    arbiter,
    throughputRatio: arbiter.requestsPerSecond / baseline.requestsPerSecond,
    p50Ratio: arbiter.latency.p50 / baseline.latency.p50,
    p99Ratio: arbiter.latency.p99 / baseline.latency.p99,
    scale,
    scaleExponent,
  }
}
