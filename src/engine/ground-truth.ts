import { appendAuditRecords } from '../audit-log/append.ts'
import type { Queryable } from '../db/pool.ts'
import { withTransaction } from '../db/pool.ts'
import {
  type ProbeRunKey,
  type ProbeRunRow,
  probeRunClaim,
  probeRunRecordStore,
  probeRunRelease,
} from '../db/repositories/probe-runs.ts'
import { runStatement } from '../db/statement.ts'
import type { GroundTruthRecord } from '../probes/probe-runner.ts'
import type { Actor, ServiceContext } from '../services/context.ts'
import { probeExecutedEntry, runRegisteredProbe } from '../services/probes.ts'
import { caseAuditEntry } from './case-audit.ts'
import type { AuditSubject, GroundTruthRun, GroundTruthSource } from './case-kind.ts'

/*
 * Ground-truth probes run OUTSIDE any transaction. Holding the case's row lock (and with it a pooled connection)
 * across an HTTP call of up to timeout × attempts would let a slow probe target starve the pool — and on the
 * embedded database, which runs one transaction at a time, stall every request. Instead the first evaluation
 * claims the round in `probe_runs` and commits; it runs the probe holding no connection and stores the record;
 * concurrent evaluations see the claim and poll (briefly, holding nothing) until the record lands; a claim whose
 * holder died expires and is taken over. The probe thus runs at most once per evaluation round.
 */

// How long past a probe's own worst case a claim stays valid before another caller may take it over.
const PROBE_CLAIM_SLACK_MS = 5_000
// Time a probe attempt may spend beyond its own timeout (connection setup, backoff).
const PROBE_ATTEMPT_SLACK_MS = 10_000

export interface ClaimedProbeRun extends GroundTruthRun {
  key: ProbeRunKey
  subject: AuditSubject
}

export type GroundTruthStep = { kind: 'run_probe'; claim: ClaimedProbeRun } | { kind: 'wait_probe' }

/** Inside the evaluation transaction: claims this round's probe run, or says to wait for its holder. */
export async function claimGroundTruth<Case>(
  tx: Queryable,
  source: GroundTruthSource<Case>,
  c: Case,
  key: ProbeRunKey,
  existing: ProbeRunRow | undefined,
  subject: AuditSubject,
  now: Date,
): Promise<GroundTruthStep> {
  if (existing && existing.claimed_until > now) return { kind: 'wait_probe' }
  const run = await source.prepare(tx, c)
  const { timeout_ms, retries } = run.probe.definition
  const worstCaseMs = timeout_ms * (retries + 1) + PROBE_ATTEMPT_SLACK_MS
  await runStatement(tx, probeRunClaim(key, new Date(now.getTime() + worstCaseMs + PROBE_CLAIM_SLACK_MS)))
  return { kind: 'run_probe', claim: { ...run, key, subject } }
}

/** Runs a claimed probe with no database connection held, then stores its record and `probe.executed`. */
export async function executeGroundTruth(
  ctx: ServiceContext,
  claim: ClaimedProbeRun,
  actor: Actor,
): Promise<void> {
  try {
    const record: GroundTruthRecord = await runRegisteredProbe(ctx, claim.probe, claim.params, claim.template)
    await withTransaction(ctx.db, async (tx) => {
      await runStatement(tx, probeRunRecordStore(claim.key, record))
      await appendAuditRecords(tx, [caseAuditEntry(claim.subject, probeExecutedEntry(record, actor))])
    })
  } catch (err) {
    // Give the round back at once: otherwise every caller would wait out the claim before trying again.
    await runStatement(ctx.db, probeRunRelease(claim.key)).catch(() => {})
    throw err
  }
}
