import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Queryable } from '../db/pool.ts'
import { withTransaction } from '../db/pool.ts'
import { insertEscalation } from '../db/repositories/escalations.ts'
import { latestInterpretations } from '../db/repositories/interpretations.ts'
import {
  claimProbeRun,
  findManifest,
  findProbeRun,
  releaseProbeRun,
  storeProbeRunRecord,
} from '../db/repositories/manifests.ts'
import {
  findOutcome,
  listEvidenceVersions,
  type OutcomeRow,
  updateOutcomeDecision,
} from '../db/repositories/outcomes.ts'
import { findProbe, type ProbeRow } from '../db/repositories/probes.ts'
import { hashJson } from '../domain/canonical-json.ts'
import {
  type DecidedDecision,
  type DecisionInput,
  decide,
  type InterpretationInput,
  needsGroundTruth,
} from '../domain/decision.ts'
import { AppError } from '../errors.ts'
import type { GroundTruthRecord } from '../probes/probe-runner.ts'
import { appendAuditRecord } from './audit-log.ts'
import type { Actor, ServiceContext } from './context.ts'
import { envelopeFromRow, issueManifest, type ManifestEnvelope } from './manifests.ts'
import { probeExecutedEntry, runRegisteredProbe } from './probes.ts'

export type EvaluationResult =
  | { kind: 'manifest'; envelope: ManifestEnvelope }
  | { kind: 'pending'; missing_orchestrators: string[] }

type Step =
  | EvaluationResult
  | { kind: 'run_probe'; probe: ProbeRow; outcome: OutcomeRow; inputsDigest: string }
  | { kind: 'wait_probe'; until: Date }

// How long past a probe's own worst case a claim stays valid before another caller may take it over.
const PROBE_CLAIM_SLACK_MS = 5_000
// A caller waiting on another caller's probe gives up (503, retry) after this long instead of hanging.
const MAX_PROBE_WAIT_MS = 15_000

/**
 * POST /v1/outcomes/{id}/evaluate. Serialized per outcome by the outcome row lock, so concurrent callers on any
 * number of replicas get one manifest.
 *
 * Probes run OUTSIDE any transaction. Holding the row lock (and with it a pooled connection) across an HTTP call
 * of up to timeout × attempts would let a slow probe target starve the pool — and on the embedded database,
 * which runs one transaction at a time, stall every request. Instead the first caller claims the round in
 * `probe_runs` and commits; it runs the probe with no connection held and stores the record; concurrent callers
 * see the claim and poll (briefly, holding nothing) until the record lands; a claim whose holder died expires
 * and is taken over. The probe thus runs at most once per evaluation round.
 */
export async function evaluateOutcome(
  ctx: ServiceContext,
  outcomeId: string,
  actor: Actor,
): Promise<EvaluationResult> {
  let waitedMs = 0
  for (;;) {
    if (waitedMs > MAX_PROBE_WAIT_MS) {
      throw new AppError(
        'PROBE_IN_PROGRESS',
        'the ground-truth probe for this outcome is still running; retry shortly',
      )
    }
    const step = await withTransaction(ctx.db, (tx) => evaluationStep(tx, ctx, outcomeId, actor))
    if (step.kind === 'manifest' || step.kind === 'pending') return step
    if (step.kind === 'run_probe') {
      await executeProbe(ctx, step, actor)
      continue
    }
    const pause = Math.min(250, 25 + waitedMs / 4)
    waitedMs += pause
    await sleep(pause)
  }
}

async function evaluationStep(
  tx: Queryable,
  ctx: ServiceContext,
  outcomeId: string,
  actor: Actor,
): Promise<Step> {
  const outcome = await findOutcome(tx, outcomeId, { lock: true })
  if (!outcome) throw new AppError('NOT_FOUND', `no outcome ${outcomeId}`)
  const current = outcome.manifest_id ? await findManifest(tx, outcome.manifest_id) : undefined
  // Once a final manifest exists, evaluate returns it (SPEC §3).
  if (current?.final) return { kind: 'manifest', envelope: envelopeFromRow(current) }

  const input = await loadDecisionInput(tx, outcome)
  const first = decide(input, null)
  if (first.kind === 'pending') return { kind: 'pending', missing_orchestrators: first.missing_orchestrators }
  if (first.kind === 'nothing_to_decide') {
    throw new AppError('CONFLICT', 'no orchestrator has interpreted this outcome and none is expected')
  }
  const inputsDigest = hashJson({
    interpretations: input.interpretations.map((i) => [i.orchestrator_id, i.revision]).sort(),
    evidence_hash: outcome.evidence_hash,
    missing: first.missing_orchestrators,
  })
  // Unchanged inputs since the last REEVALUATE: the same manifest, and no new round.
  if (current && current.inputs_digest === inputsDigest) {
    return { kind: 'manifest', envelope: envelopeFromRow(current) }
  }

  let groundTruth: GroundTruthRecord | null = null
  if (needsGroundTruth(input)) {
    const run = await findProbeRun(tx, outcome.id, inputsDigest)
    if (run?.record) {
      groundTruth = run.record as GroundTruthRecord
    } else {
      const now = new Date()
      if (run && run.claimed_until > now) return { kind: 'wait_probe', until: run.claimed_until }
      const probe = await findProbe(tx, outcome.probe_id!)
      if (!probe) throw new Error(`outcome ${outcome.id} references missing probe ${outcome.probe_id}`)
      const worstCaseMs = probe.definition.timeout_ms * (probe.definition.retries + 1) + 10_000
      await claimProbeRun(
        tx,
        outcome.id,
        inputsDigest,
        new Date(now.getTime() + worstCaseMs + PROBE_CLAIM_SLACK_MS),
      )
      return { kind: 'run_probe', probe, outcome, inputsDigest }
    }
  }

  const decision = decide(input, groundTruth ? { result: groundTruth.result } : null) as DecidedDecision
  const envelope = await issueDecision(tx, ctx, {
    outcome,
    decision,
    groundTruth,
    inputsDigest,
    actor,
    supersedes: current?.id ?? null,
  })
  ctx.metrics.manifestsIssued.inc({ verdict: decision.verdict, directive: decision.directive })
  return { kind: 'manifest', envelope }
}

async function loadDecisionInput(tx: Queryable, outcome: OutcomeRow): Promise<DecisionInput> {
  const [rows, versions] = [
    await latestInterpretations(tx, [outcome.id]),
    await listEvidenceVersions(tx, [outcome.id]),
  ]
  const itemsByVersion = new Map(versions.map((v) => [v.evidence_hash, v.item_hashes]))
  const interpretations: InterpretationInput[] = rows.map((row) => ({
    orchestrator_id: row.orchestrator_id,
    success_criterion_signature: row.success_criterion_signature,
    success_criterion: row.has_criterion ? (row.success_criterion ?? null) : undefined,
    outcome_interpretation: row.outcome_interpretation,
    evidence_hash: row.evidence_hash,
    evidence_item_hashes: itemsByVersion.get(row.evidence_hash) ?? [],
    intended_action: row.intended_action,
    revision: row.revision,
    received_at: row.received_at.toISOString(),
  }))
  return {
    interpretations,
    expected_orchestrators: outcome.expected_orchestrators,
    has_deadline: outcome.deadline !== null,
    deadline_passed: outcome.deadline !== null && outcome.deadline.getTime() <= Date.now(),
    arbiter_orchestrator_id: outcome.arbiter_orchestrator_id,
    has_probe: outcome.probe_id !== null,
    fallback_policy: outcome.fallback_policy,
    reevaluation_rounds: outcome.reevaluation_rounds,
  }
}

async function issueDecision(
  tx: Queryable,
  ctx: ServiceContext,
  args: {
    outcome: OutcomeRow
    decision: DecidedDecision
    groundTruth: GroundTruthRecord | null
    inputsDigest: string
    actor: Actor
    supersedes: string | null
  },
): Promise<ManifestEnvelope> {
  const { outcome, decision } = args
  const halted = decision.directive === 'HALT'
  const manifestId = randomUUID()
  // Rows that name the manifest go first; issueManifest takes the global chain lock and must come last.
  if (halted) await insertEscalation(tx, { outcomeId: outcome.id, manifestId, openedAt: new Date() })
  await updateOutcomeDecision(tx, outcome.id, {
    status: decision.directive === 'PROCEED' ? 'decided' : halted ? 'halted' : 'open',
    manifestId,
    reevaluationRounds: outcome.reevaluation_rounds + (decision.directive === 'REEVALUATE' ? 1 : 0),
  })
  return issueManifest(tx, ctx, {
    manifestId,
    final: decision.final,
    inputsDigest: args.inputsDigest,
    actor: args.actor,
    content: {
      outcome_id: outcome.id,
      subagent_id: outcome.subagent_id,
      run_id: outcome.run_id,
      verdict: decision.verdict,
      directive: decision.directive,
      resolved_outcome: decision.resolved_outcome,
      subagent_outcome_evidence_hash: outcome.evidence_hash,
      interpretations: decision.interpretations.map((i) => ({
        orchestrator_id: i.orchestrator_id,
        success_criterion_signature: i.success_criterion_signature,
        outcome_interpretation: i.outcome_interpretation,
        evidence_hash: i.evidence_hash,
        intended_action: i.intended_action,
        revision: i.revision,
        received_at: i.received_at,
      })),
      interpretation_divergence_receipt: decision.interpretation_divergence_receipt,
      ground_truth_arbiter_predicate: args.groundTruth,
      action_owner: decision.action_owner,
      missing_orchestrators: decision.missing_orchestrators,
      supersedes: args.supersedes,
      resolution: null,
    },
    after: halted
      ? [
          {
            kind: 'escalation.opened',
            actor: args.actor,
            outcome_id: outcome.id,
            manifest_id: manifestId,
            subagent_id: outcome.subagent_id,
            verdict: decision.verdict,
            data: { receipt_digest: decision.interpretation_divergence_receipt?.receipt_digest ?? null },
          },
        ]
      : [],
  })
}

/** Runs the claimed probe with no database connection held, then records the execution (SPEC: probe.executed). */
async function executeProbe(
  ctx: ServiceContext,
  step: { probe: ProbeRow; outcome: OutcomeRow; inputsDigest: string },
  actor: Actor,
): Promise<void> {
  const { probe, outcome } = step
  try {
    const record = await runRegisteredProbe(ctx, probe, outcome.probe_params ?? {}, {
      subagent_id: outcome.subagent_id,
      run_id: outcome.run_id,
    })
    await withTransaction(ctx.db, async (tx) => {
      await storeProbeRunRecord(tx, outcome.id, step.inputsDigest, record)
      await appendAuditRecord(tx, probeExecutedEntry(record, actor, outcome))
    })
  } catch (err) {
    // Give the round back at once: otherwise every caller would wait out the claim before trying again.
    await releaseProbeRun(ctx.db, outcome.id, step.inputsDigest).catch(() => {})
    throw err
  }
}
