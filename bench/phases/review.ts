import { type HttpTarget, type LatencySummary, type Recorder, UnexpectedResponse } from '../load.ts'

/**
 * The review phase: what an orchestrator pays to have a change judged by a two-stage panel, against the bare
 * stack's POST /insert3 measured right before it with the same closed-loop clients.
 *
 * One iteration is the whole review of one change, each call one request:
 * POST /v1/reviews (two_stage) → POST …/verdicts (stage 1, DONE) → POST …/verdicts (stage 2,
 * DONE_WITH_CONCERNS) → POST …/decide, which must answer 200 with DONE_WITH_CONCERNS / APPLY.
 */

/** The figures the run measures for a closed-loop window (requests/s, latency of every request, …). */
export interface MeasuredWindow {
  requestsPerSecond: number
  failedRequests: number
  latency: LatencySummary
}

export type Iteration = (loop: number, rec: Recorder) => Promise<void>

/** What the phase needs from the run, so it carries no knowledge of how the run starts or measures servers. */
export interface ReviewPhaseRun<Window extends MeasuredWindow> {
  baseTarget: HttpTarget
  arbTarget: HttpTarget
  /** An orchestrator key bound to `orch-a`, which owns the reviews. */
  orchestratorKey: string
  /** The ~1 KB body POST /insert3 stores three times. */
  insert3Body: string
  loops: number
  log: (message: string) => void
  /** Unmeasured warm-up loops. */
  warmUp: (iteration: Iteration) => Promise<void>
  /** Measured loops, with the CPU of the server under test. */
  measure: (server: 'baseline' | 'arbiter', iteration: Iteration) => Promise<Window>
}

export interface ReviewPhase<Window extends MeasuredWindow> {
  loops: number
  baseline: Window
  arbiter: Window
  throughputRatio: number
  p50Ratio: number
  p99Ratio: number
}

const DIGEST = `sha256:${'5e'.repeat(32)}`
let reviewCounter = 0
const keyPrefix = `bench-${process.pid}-${Date.now().toString(36)}`

/** One two-stage review, create to signed manifest, each call recorded under its label and the whole as 'path'. */
export async function reviewPath(target: HttpTarget, rec: Recorder, key: string): Promise<void> {
  const started = performance.now()
  const created = await target.call<{ review_id: string }>(rec, 'POST', '/v1/reviews', {
    key,
    label: 'create',
    expect: [201],
    body: {
      orchestrator_id: 'orch-a',
      review_key: `${keyPrefix}-${++reviewCounter}`,
      mode: 'two_stage',
      subject: { digest: DIGEST, description: 'refund retry fix', uri: 'https://git.example/pr/481' },
      implementer: { model: 'model-m', context_id: 'ctx-1' },
      judges: [
        { judge_id: 'spec', model: 'model-l', context_id: 'ctx-2', stage: 1 },
        { judge_id: 'quality', model: 'model-l', context_id: 'ctx-3', stage: 2 },
      ],
    },
  })
  const reviewId = created.body.review_id
  await target.call(rec, 'POST', `/v1/reviews/${reviewId}/verdicts`, {
    key,
    label: 'verdict',
    expect: [201],
    body: {
      judge_id: 'spec',
      revision: 0,
      status: 'DONE',
      summary: 'Retries are bounded as the spec asks.',
      evidence: ['test refund_retry_once passes'],
    },
  })
  await target.call(rec, 'POST', `/v1/reviews/${reviewId}/verdicts`, {
    key,
    label: 'verdict',
    expect: [201],
    body: {
      judge_id: 'quality',
      revision: 0,
      status: 'DONE_WITH_CONCERNS',
      summary: 'Readable; one rename.',
      evidence: ['read the diff'],
      concerns: ['rename retryOnce'],
    },
  })
  const decided = await target.call<{ manifest: { verdict: string; directive: string } }>(
    rec,
    'POST',
    `/v1/reviews/${reviewId}/decide`,
    { key, label: 'decide', expect: [200], body: {} },
  )
  rec.add('path', performance.now() - started, false)
  const { verdict, directive } = decided.body.manifest
  if (verdict !== 'DONE_WITH_CONCERNS' || directive !== 'APPLY') {
    const message = `decide: ${verdict} / ${directive}, expected DONE_WITH_CONCERNS / APPLY`
    rec.failure(message)
    throw new UnexpectedResponse(message)
  }
}

export async function phaseReview<Window extends MeasuredWindow>(
  run: ReviewPhaseRun<Window>,
): Promise<ReviewPhase<Window>> {
  const insert3: Iteration = async (_loop, rec) => {
    await run.baseTarget.call(rec, 'POST', '/insert3', {
      body: run.insert3Body,
      expect: [201],
      label: 'insert3',
    })
  }
  const review: Iteration = (_loop, rec) => reviewPath(run.arbTarget, rec, run.orchestratorKey)
  run.log(`review: baseline POST /insert3, ${run.loops} loops`)
  await run.warmUp(insert3)
  const baseline = await run.measure('baseline', insert3)
  run.log(`review: Arbiter two_stage review (create, 2 verdicts, decide), ${run.loops} loops`)
  await run.warmUp(review)
  const arbiter = await run.measure('arbiter', review)
  return {
    loops: run.loops,
    baseline,
    arbiter,
    throughputRatio: arbiter.requestsPerSecond / baseline.requestsPerSecond,
    p50Ratio: arbiter.latency.p50 / baseline.latency.p50,
    p99Ratio: arbiter.latency.p99 / baseline.latency.p99,
  }
}
