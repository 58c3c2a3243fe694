import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { PG, pgErrorCode } from '../db/pg-errors.ts'
import type { Queryable } from '../db/pool.ts'
import { withTransaction } from '../db/pool.ts'
import { escalationInsert } from '../db/repositories/escalations.ts'
import { type ManifestRow, manifestById } from '../db/repositories/manifests.ts'
import { probeRunByKey } from '../db/repositories/probe-runs.ts'
import { queryFirst } from '../db/statement.ts'
import { AppError } from '../errors.ts'
import type { GroundTruthRecord } from '../probes/probe-runner.ts'
import type { Actor, ServiceContext } from '../services/context.ts'
import { inSpan, type SpanAttributes } from '../tracing/spans.ts'
import { caseAuditEntry } from './case-audit.ts'
import type { CaseKind, Decided, ManifestContent } from './case-kind.ts'
import { decideCase } from './decision-workers.ts'
import { claimGroundTruth, executeGroundTruth, type GroundTruthStep } from './ground-truth.ts'
import {
  issueSignedManifest,
  issueSignedManifestIf,
  type ManifestToIssue,
  parseManifest,
  type StoredEnvelope,
} from './manifests.ts'

export type Evaluation<Pending> =
  | { kind: 'manifest'; envelope: StoredEnvelope }
  | { kind: 'pending'; pending: Pending }

export interface EvaluationOptions<Case, Request = never> {
  /** What the caller asked for with this evaluation (a fan-out's `close`); the kind's `loadInput` reads it. */
  request?: Request
  /**
   * Runs on the locked case before anything is read or decided; throws (e.g. a 403 for a caller that does not
   * own the case) to refuse. Checking on the row the evaluation locks costs no read of its own.
   */
  authorize?: (c: Case) => void
}

/** One evaluation: the case (its kind and id), who asks, and what the caller asked for. */
interface EvaluationCall<Case, Input, Content extends ManifestContent, Pending, Resolution, Request> {
  kind: CaseKind<Case, Input, Content, Pending, Resolution, Request>
  caseId: string
  actor: Actor
  options: EvaluationOptions<Case, Request>
}

type Step<Pending> =
  | { kind: 'manifest'; envelope: StoredEnvelope; issued: ManifestRow | null }
  | { kind: 'pending'; pending: Pending }
  | GroundTruthStep

// A caller waiting on another caller's probe gives up (503, retry) after this long instead of hanging.
const MAX_PROBE_WAIT_MS = 15_000

/**
 * Evaluates a case of any kind: lock → load → decide once → transition → issue. Serialized per case by its row
 * lock, so any number of concurrent callers on any number of replicas get one manifest; unchanged inputs give
 * the manifest already issued, and once the round's manifest is final, that manifest. When the decision needs
 * the case's ground-truth probe, the probe runs between two steps, outside any transaction (./ground-truth.ts).
 */
export async function evaluateCase<
  Case,
  Input,
  Content extends ManifestContent,
  Pending,
  Resolution,
  Request,
>(
  ctx: ServiceContext,
  kind: CaseKind<Case, Input, Content, Pending, Resolution, Request>,
  caseId: string,
  actor: Actor,
  options: EvaluationOptions<Case, Request> = {},
): Promise<Evaluation<Pending>> {
  return inSpan(
    'arbiter.decide',
    { 'arbiter.case.kind': kind.name, 'arbiter.case.id': caseId },
    async (span) => {
      const evaluation = await evaluate(ctx, { kind, caseId, actor, options })
      if (span.recording) span.setAttributes(evaluationAttributes(evaluation))
      return evaluation
    },
  )
}

/** What a decision span says of its result: the verdict and directive, or that the case still waits. */
function evaluationAttributes(evaluation: Evaluation<unknown>): SpanAttributes {
  if (evaluation.kind === 'pending') return { 'arbiter.decision': 'pending' }
  const manifest = parseManifest(evaluation.envelope)
  return {
    'arbiter.decision': 'manifest',
    'arbiter.verdict': manifest.verdict,
    'arbiter.directive': manifest.directive,
    'arbiter.manifest.id': manifest.manifest_id,
  }
}

async function evaluate<Case, Input, Content extends ManifestContent, Pending, Resolution, Request>(
  ctx: ServiceContext,
  call: EvaluationCall<Case, Input, Content, Pending, Resolution, Request>,
): Promise<Evaluation<Pending>> {
  const decided = call.kind.optimistic && (await optimisticDecision(ctx, call))
  if (decided) {
    ctx.metrics.manifestsIssued.inc({ verdict: decided.verdict, directive: decided.directive })
    return { kind: 'manifest', envelope: decided }
  }
  let waitedMs = 0
  for (;;) {
    if (waitedMs > MAX_PROBE_WAIT_MS) {
      throw new AppError(
        'PROBE_IN_PROGRESS',
        `the ground-truth probe for this ${call.kind.noun} is still running; retry shortly`,
      )
    }
    const step = await withTransaction(ctx.db, (tx) => evaluationStep(tx, ctx, call))
    switch (step.kind) {
      case 'manifest':
        if (step.issued) {
          ctx.metrics.manifestsIssued.inc({ verdict: step.issued.verdict, directive: step.issued.directive })
        }
        return { kind: 'manifest', envelope: step.envelope }
      case 'pending':
        return step
      case 'run_probe':
        await executeGroundTruth(ctx, step.claim, call.actor)
        continue
      case 'wait_probe': {
        const pause = Math.min(250, 25 + waitedMs / 4)
        waitedMs += pause
        await sleep(pause)
      }
    }
  }
}

/**
 * A case's first decision without a transaction, for kinds that offer it (CaseKind.optimistic): read the case
 * and its version, read its inputs, decide, then write the case's new state, the manifest and its records in one
 * statement that writes only if the case row is still at the version read. Any change since (an input accepted,
 * another caller's decision) gave the row a new version, or holds its lock until it does: the statement writes
 * nothing and the evaluation takes the transaction path, which sees that change. Anything but a first decision
 * with no probe (waiting, a manifest already issued, ground truth to fetch) goes that way from the start.
 */
async function optimisticDecision<Case, Input, Content extends ManifestContent, Pending, Resolution, Request>(
  ctx: ServiceContext,
  { kind, caseId, actor, options }: EvaluationCall<Case, Input, Content, Pending, Resolution, Request>,
): Promise<ManifestRow | undefined> {
  const optimistic = kind.optimistic!
  const now = new Date()
  const read = await optimistic.read(ctx.db, caseId, now)
  if (read === undefined) return undefined
  const c = read.case
  if (kind.manifestId(c) !== null || kind.groundTruth?.attached(c)) return undefined
  options.authorize?.(c)
  const input = read.input ?? (await kind.loadInput(ctx.db, c, now, options.request))
  const decision = await decideCase(ctx.decisionWorkers, kind, c, input, null)
  if (decision.kind !== 'decided') return undefined
  const decided = decision.decided
  const manifestId = randomUUID()
  const issue = manifestIssue(kind, c, decided, manifestId, {
    inputsDigest: kind.inputsDigest(c, input),
    supersedes: null,
    actor,
    now,
  })
  try {
    return await issueSignedManifestIf(
      ctx.db,
      ctx,
      issue,
      optimistic.recordDecisionIf(c, read.version, decided, manifestId, input),
    )
  } catch (err) {
    // Another caller's manifest took a unique key first: the transaction path answers with it.
    if (pgErrorCode(err) === PG.UNIQUE_VIOLATION) return undefined
    throw err
  }
}

/** The manifest of the case's current round, if it has one. */
async function currentManifest<Case>(
  tx: Queryable,
  kind: Pick<CaseKind<Case, unknown, ManifestContent, unknown>, 'manifestId' | 'round'>,
  c: Case,
): Promise<ManifestRow | undefined> {
  const id = kind.manifestId(c)
  const row = id === null ? undefined : await queryFirst(tx, manifestById(id))
  return row && row.case_round === kind.round(c) ? row : undefined
}

async function evaluationStep<Case, Input, Content extends ManifestContent, Pending, Resolution, Request>(
  tx: Queryable,
  ctx: ServiceContext,
  { kind, caseId, actor, options }: EvaluationCall<Case, Input, Content, Pending, Resolution, Request>,
): Promise<Step<Pending>> {
  const now = new Date()
  const c = await kind.lock(tx, caseId)
  if (c === undefined) throw new AppError('NOT_FOUND', `no ${kind.noun} ${caseId}`)
  options.authorize?.(c)
  const current = await currentManifest(tx, kind, c)
  if (current?.final) return { kind: 'manifest', envelope: current, issued: null }

  const input = await kind.loadInput(tx, c, now, options.request)
  const inputsDigest = kind.inputsDigest(c, input)
  // Unchanged inputs since the last non-final manifest: the same manifest, and no new round.
  if (current && current.inputs_digest === inputsDigest) {
    return { kind: 'manifest', envelope: current, issued: null }
  }
  const ref = { kind: kind.name, id: kind.caseId(c) }
  const probeRunKey = { case: ref, inputsDigest }
  const probeRun = kind.groundTruth?.attached(c)
    ? await queryFirst(tx, probeRunByKey(probeRunKey))
    : undefined
  const groundTruth = (probeRun?.record ?? null) as GroundTruthRecord | null
  const decision = await decideCase(ctx.decisionWorkers, kind, c, input, groundTruth)

  switch (decision.kind) {
    case 'pending':
      return { kind: 'pending', pending: decision.pending }
    case 'nothing_to_decide':
      throw new AppError('CONFLICT', decision.detail)
    case 'needs_ground_truth':
      if (!kind.groundTruth) throw new Error(`${kind.name} asked for ground truth but has no probe source`)
      return claimGroundTruth(tx, kind.groundTruth, c, probeRunKey, probeRun, kind.auditSubject(c), now)
    case 'decided': {
      const issued = await issueDecision(tx, ctx, kind, c, decision.decided, {
        input,
        inputsDigest,
        supersedes: current?.id ?? null,
        actor,
        now,
      })
      return { kind: 'manifest', envelope: issued, issued }
    }
  }
}

/** Escalation (if the decision opens one), the case's new state, then the signed manifest and its records. */
async function issueDecision<Case, Input, Content extends ManifestContent, Pending, Resolution, Request>(
  tx: Queryable,
  ctx: ServiceContext,
  kind: CaseKind<Case, Input, Content, Pending, Resolution, Request>,
  c: Case,
  decided: Decided<Content>,
  args: { input: Input; inputsDigest: string; supersedes: string | null; actor: Actor; now: Date },
): Promise<ManifestRow> {
  const manifestId = randomUUID()
  const issue = manifestIssue(kind, c, decided, manifestId, args)
  return issueSignedManifest(tx, ctx, {
    ...issue,
    alongside: [...(issue.alongside ?? []), kind.recordDecision(c, decided, manifestId, args.input)],
  })
}

/** A decided case's manifest to issue, with the escalation (row and record) when the decision opens one. */
function manifestIssue<Case, Input, Content extends ManifestContent, Pending, Resolution, Request>(
  kind: CaseKind<Case, Input, Content, Pending, Resolution, Request>,
  c: Case,
  decided: Decided<Content>,
  manifestId: string,
  args: { inputsDigest: string; supersedes: string | null; actor: Actor; now: Date },
): ManifestToIssue<Content> {
  const subject = kind.auditSubject(c)
  const ref = { kind: kind.name, id: kind.caseId(c) }
  return {
    case: ref,
    round: kind.round(c),
    manifestKind: kind.manifestKind,
    manifestId,
    content: decided.content,
    supersedes: args.supersedes,
    final: decided.final,
    inputsDigest: args.inputsDigest,
    actor: args.actor,
    subject,
    after: decided.escalation
      ? [
          caseAuditEntry(subject, {
            kind: 'escalation.opened',
            actor: args.actor,
            manifest_id: manifestId,
            verdict: decided.content.verdict,
            data: decided.escalation.data,
          }),
        ]
      : [],
    alongside: decided.escalation ? [escalationInsert(ref, manifestId, args.now)] : [],
  }
}
