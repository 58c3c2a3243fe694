import { appendAuditRecords } from '../../audit-log/append.ts'
import { withTransaction } from '../../db/pool.ts'
import { probeById } from '../../db/repositories/probes.ts'
import { queryFirst, runStatement } from '../../db/statement.ts'
import { breach, LIMITS } from '../../domain/limits.ts'
import { DEFAULT_FALLBACK_POLICY, type FallbackPolicy } from '../../domain/outcome/vocabulary.ts'
import { sortedUnique } from '../../domain/shared/order.ts'
import { AppError, found, limitExceeded } from '../../errors.ts'
import type { Actor, ServiceContext } from '../../services/context.ts'
import {
  type SubagentPolicyRow,
  subagentPolicyById,
  subagentPolicyDelete,
  subagentPolicyUpsert,
} from './subagent-policy-repository.ts'

/*
 * Sub-agent policies (admin): the rules every new outcome of a sub-agent takes, whoever creates it
 * (src/domain/outcome/subagent-policy.ts). Setting or removing one changes no existing outcome.
 */

/** `PUT /v1/subagents/{subagent_id}/policy`: omitted fields take their defaults, and outcomes are locked to them. */
export interface NewSubagentPolicy {
  expected_orchestrators: string[]
  arbiter_orchestrator_id?: string | undefined
  deadline_seconds?: number | undefined
  fallback_policy?: FallbackPolicy | undefined
  /** Only the probe: each outcome body supplies its params. */
  probe?: { probe_id: string } | undefined
}

export async function setSubagentPolicy(
  ctx: Pick<ServiceContext, 'db'>,
  subagentId: string,
  body: NewSubagentPolicy,
  actor: Actor,
): Promise<SubagentPolicyView> {
  const row: SubagentPolicyRow = {
    subagent_id: subagentId,
    expected_orchestrators: sortedUnique(body.expected_orchestrators),
    arbiter_orchestrator_id: body.arbiter_orchestrator_id ?? null,
    deadline_seconds: body.deadline_seconds ?? null,
    fallback_policy: body.fallback_policy ?? DEFAULT_FALLBACK_POLICY,
    probe_id: body.probe?.probe_id ?? null,
    updated_at: new Date(),
  }
  // Its outcomes take these orchestrators: an outcome may have no more.
  if (row.expected_orchestrators.length > LIMITS.orchestrators_per_outcome) {
    throw limitExceeded(
      breach('orchestrators_per_outcome', row.expected_orchestrators.length, 'body/expected_orchestrators'),
      'too many expected orchestrators',
    )
  }
  return withTransaction(ctx.db, async (tx) => {
    if (row.probe_id !== null && !(await queryFirst(tx, probeById(row.probe_id)))) {
      throw new AppError('UNPROCESSABLE', `probe ${row.probe_id} is not registered`, {}, [
        { path: 'body/probe/probe_id', message: 'unknown probe' },
      ])
    }
    await runStatement(tx, subagentPolicyUpsert(row))
    const view = toSubagentPolicyView(row)
    await appendAuditRecords(tx, [
      {
        kind: 'policy.set',
        actor,
        at: view.updated_at,
        subagent_id: subagentId,
        data: policyRules(row),
      },
    ])
    return view
  })
}

export async function getSubagentPolicy(
  ctx: Pick<ServiceContext, 'db'>,
  subagentId: string,
): Promise<SubagentPolicyView> {
  const row = found(
    await queryFirst(ctx.db, subagentPolicyById(subagentId)),
    `sub-agent ${subagentId} has no policy`,
  )
  return toSubagentPolicyView(row)
}

/** Removes the policy: the sub-agent's next outcomes set their own rules again; existing ones keep theirs. */
export async function removeSubagentPolicy(
  ctx: Pick<ServiceContext, 'db'>,
  subagentId: string,
  actor: Actor,
): Promise<void> {
  await withTransaction(ctx.db, async (tx) => {
    const removed = found(
      await queryFirst(tx, subagentPolicyDelete(subagentId)),
      `sub-agent ${subagentId} has no policy`,
    )
    await appendAuditRecords(tx, [
      {
        kind: 'policy.removed',
        actor,
        subagent_id: subagentId,
        // What the sub-agent's outcomes followed until now.
        data: policyRules(removed),
      },
    ])
  })
}

function toSubagentPolicyView(row: SubagentPolicyRow) {
  return { subagent_id: row.subagent_id, ...policyRules(row), updated_at: row.updated_at.toISOString() }
}

export type SubagentPolicyView = ReturnType<typeof toSubagentPolicyView>

/** The rules a policy sets, as its view shows them and its audit records carry them (with the sub-agent). */
function policyRules(row: SubagentPolicyRow) {
  const { expected_orchestrators, arbiter_orchestrator_id, deadline_seconds, fallback_policy, probe_id } = row
  return {
    expected_orchestrators,
    arbiter_orchestrator_id,
    deadline_seconds,
    fallback_policy,
    probe: probe_id === null ? null : { probe_id },
  }
}
