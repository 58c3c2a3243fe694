import { randomUUID } from 'node:crypto'
import { auditAppend, auditAppended } from '../../audit-log/append.ts'
import type { Queryable } from '../../db/pool.ts'
import { withTransaction } from '../../db/pool.ts'
import { probeById } from '../../db/repositories/probes.ts'
import { queryFirst, queryOne, runStatement } from '../../db/statement.ts'
import { breach, LIMITS } from '../../domain/limits.ts'
import {
  type EvidenceItem,
  evidenceHash,
  firstOccurrences,
  type HashedEvidenceItem,
  hashEvidence,
} from '../../domain/outcome/evidence.ts'
import { type BoundOutcome, outcomeManifestBound } from '../../domain/outcome/manifest-bound.ts'
import {
  type OutcomeRules,
  outcomeBodyFingerprint,
  outcomeRules,
  sameOutcomeBody,
} from '../../domain/outcome/subagent-policy.ts'
import type { FallbackPolicy } from '../../domain/outcome/vocabulary.ts'
import type { JsonValue } from '../../domain/shared/canonical-json.ts'
import { sortedUnique } from '../../domain/shared/order.ts'
import { AppError, limitExceeded } from '../../errors.ts'
import type { Actor, ServiceContext } from '../../services/context.ts'
import { assertEvidenceWithinLimit } from './evidence.ts'
import { evidenceWrites } from './evidence-repository.ts'
import {
  type NewOutcome as NewOutcomeRow,
  newOutcomeInsert,
  type OutcomeRow,
  outcomeByKey,
  outcomeInsertIfAbsent,
} from './repository.ts'
import { type SubagentPolicyRow, subagentPolicyById } from './subagent-policy-repository.ts'
import { loadOutcomeView, toOutcomeView } from './views.ts'

/** `POST /v1/outcomes`: a sub-agent result, its evidence, and how it will be decided. */
export interface NewOutcome {
  subagent_id: string
  run_id: string
  evidence: EvidenceItem[]
  expected_orchestrators?: string[] | undefined
  deadline?: string | undefined
  arbiter_orchestrator_id?: string | undefined
  /** `probe_id` may be left out when the sub-agent's policy names the probe. */
  probe?: { probe_id?: string | undefined; params?: Record<string, JsonValue> | undefined } | undefined
  fallback_policy?: FallbackPolicy | undefined
}

/** The limits a new outcome's body is held to: its orchestrators and its evidence items. */
function assertOutcomeWithinLimits(body: NewOutcome, itemHashes: readonly string[]): void {
  const expected = new Set(body.expected_orchestrators ?? [])
  if (expected.size > LIMITS.orchestrators_per_outcome) {
    throw limitExceeded(
      breach('orchestrators_per_outcome', expected.size, 'body/expected_orchestrators'),
      'too many expected orchestrators',
    )
  }
  assertEvidenceWithinLimit(itemHashes.length, 'body/evidence')
}

export async function createOutcome(ctx: Pick<ServiceContext, 'db'>, body: NewOutcome, actor: Actor) {
  const hashed = hashEvidence(body.evidence)
  const itemHashes = sortedUnique(hashed.map((h) => h.item_hash))
  assertOutcomeWithinLimits(body, itemHashes)
  const currentEvidenceHash = evidenceHash(itemHashes)
  const evidence = { hashed, itemHashes, evidenceHash: currentEvidenceHash }
  const now = new Date()
  // Most outcomes are new, of a sub-agent without a policy, with no probe to check: one statement writes them
  // (it writes nothing when the key exists or a policy appeared, and the path below reads both).
  const bodyRules = body.probe ? null : outcomeRules(body, null, now.getTime())
  if (bodyRules?.ok) {
    const created = newOutcome(body, bodyRules.rules, null, evidence, now, actor)
    if (await queryFirst(ctx.db, newOutcomeInsert(created.row, created.evidence, created.audit))) {
      auditAppended(ctx.db)
      return { created: true, outcome: created.view }
    }
  }
  return withTransaction(ctx.db, async (tx) => {
    // An outcome that exists is judged against what it was created with, whatever its sub-agent's policy is now:
    // the same body again is 200 even after the policy changed, and the policy's 422s are for new outcomes only.
    const existing = await queryFirst(tx, outcomeByKey(body.subagent_id, body.run_id))
    if (existing) return { created: false, outcome: await existingOutcome(tx, existing, body) }
    // Read in the transaction that creates the outcome: the outcome is created under the policy it was checked
    // against, and keeps it whatever happens to the policy afterwards.
    const policy = (await queryFirst(tx, subagentPolicyById(body.subagent_id))) ?? null
    const decided = outcomeRules(body, policy, now.getTime())
    if (!decided.ok) {
      throw new AppError(
        'UNPROCESSABLE',
        policy
          ? `sub-agent ${body.subagent_id} has a policy: its outcomes take ${decided.errors.map((e) => e.path.slice(1)).join(', ')} from it`
          : decided.errors[0]!.message,
        {},
        decided.errors.map((error) => ({ ...error, path: `body${error.path}` })),
      )
    }
    const rules = decided.rules
    if (rules.probe && !(await queryFirst(tx, probeById(rules.probe.probe_id)))) {
      throw new AppError('UNPROCESSABLE', `probe ${rules.probe.probe_id} is not registered`, {}, [
        { path: 'body/probe/probe_id', message: 'unknown probe' },
      ])
    }
    const created = newOutcome(body, rules, policy, evidence, now, actor)
    const row = await queryFirst(tx, outcomeInsertIfAbsent(created.row))
    if (!row) {
      // Lost a race with a concurrent create of the same key: judged like any resend.
      const winner = await queryOne(tx, outcomeByKey(body.subagent_id, body.run_id))
      return { created: false, outcome: await existingOutcome(tx, winner, body) }
    }
    await runStatement(
      tx,
      evidenceWrites(row.id, created.evidence.items, {
        evidence_hash: currentEvidenceHash,
        item_hashes: itemHashes,
        created_at: now,
      }),
    )
    await runStatement(tx, created.audit)
    auditAppended(tx)
    return { created: true, outcome: created.view }
  })
}

/** A new outcome under `rules`: its row, its evidence, its `outcome.created` record and the view answered. */
function newOutcome(
  body: NewOutcome,
  rules: OutcomeRules,
  policy: SubagentPolicyRow | null,
  evidence: { hashed: HashedEvidenceItem[]; itemHashes: string[]; evidenceHash: string },
  now: Date,
  actor: Actor,
) {
  // "The same body again" is judged with defaults filled in (the policy's, under a sub-agent policy).
  const requestDigest = outcomeBodyFingerprint(
    body,
    policy ? { ...rules, probe_id: rules.probe?.probe_id ?? null } : null,
  )
  const row: NewOutcomeRow = {
    id: randomUUID(),
    subagent_id: body.subagent_id,
    run_id: body.run_id,
    request_digest: requestDigest,
    expected_orchestrators: rules.expected_orchestrators,
    deadline: rules.deadline === null ? null : new Date(rules.deadline),
    arbiter_orchestrator_id: rules.arbiter_orchestrator_id,
    probe_id: rules.probe?.probe_id ?? null,
    probe_params: rules.probe?.params ?? null,
    fallback_policy: rules.fallback_policy,
    evidence_hash: evidence.evidenceHash,
    created_at: now,
    manifest_bound: outcomeManifestBound(
      boundOutcome({
        subagent_id: body.subagent_id,
        run_id: body.run_id,
        expected_orchestrators: rules.expected_orchestrators,
        probe_id: rules.probe?.probe_id ?? null,
        probe_params: rules.probe?.params ?? null,
      }),
      [],
    ),
    evidence_items: evidence.itemHashes.length,
  }
  const items = firstOccurrences(evidence.hashed)
  // A new outcome's view is known without reading it back: its one evidence version, its items, nothing else.
  const view = toOutcomeView({
    ...row,
    list_seq: 0,
    status: 'open',
    manifest_id: null,
    reevaluation_rounds: 0,
    evidence_versions: [
      {
        evidence_hash: evidence.evidenceHash,
        item_hashes: evidence.itemHashes,
        created_at: now.toISOString(),
      },
    ],
    evidence: items.map((h) => h.item),
    interpretations: [],
  })
  const audit = auditAppend([
    {
      kind: 'outcome.created',
      actor,
      at: now.toISOString(),
      outcome_id: row.id,
      subagent_id: row.subagent_id,
      data: {
        run_id: row.run_id,
        evidence_hash: evidence.evidenceHash,
        item_hashes: evidence.itemHashes,
        expected_orchestrators: row.expected_orchestrators,
        deadline: row.deadline ? row.deadline.toISOString() : null,
        arbiter_orchestrator_id: row.arbiter_orchestrator_id,
        probe_id: row.probe_id,
        fallback_policy: row.fallback_policy,
        // The sub-agent policy these rules were copied from (its `policy.set` time), or null: the body set them.
        policy_updated_at: policy ? policy.updated_at.toISOString() : null,
        request_digest: requestDigest,
      },
    },
  ])
  return { row, evidence: { items, item_hashes: evidence.itemHashes }, view, audit }
}

/** The existing outcome under `body`'s natural key, if `body` is the one it was created from; else 409. */
async function existingOutcome(tx: Queryable, row: OutcomeRow, body: NewOutcome) {
  if (!sameOutcomeBody(body, row)) {
    throw new AppError(
      'CONFLICT',
      `outcome (${body.subagent_id}, ${body.run_id}) already exists with a different body`,
      { outcome_id: row.id },
    )
  }
  return loadOutcomeView(tx, row.id)
}

/** The outcome's own part of the bound on its manifests. */
export function boundOutcome(outcome: {
  subagent_id: string
  run_id: string
  expected_orchestrators: readonly string[]
  probe_id: string | null
  probe_params: Record<string, JsonValue> | null
}): BoundOutcome {
  return {
    subagent_id: outcome.subagent_id,
    run_id: outcome.run_id,
    expected_orchestrators: outcome.expected_orchestrators,
    probe_params: outcome.probe_id === null ? null : (outcome.probe_params ?? {}),
  }
}
