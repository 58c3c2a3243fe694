import { type Statement, statement } from '../../db/statement.ts'
import type { SubagentPolicy } from '../../domain/outcome/subagent-policy.ts'

/**
 * subagent_policies: the current policy of each sub-agent, every field filled in.
 * subagent_id (the key); expected_orchestrators (sorted, unique); arbiter_orchestrator_id; deadline_seconds (an
 * outcome's deadline = its creation + this); fallback_policy; probe_id (the probe its outcomes run); updated_at
 * (when an admin last set it). Its history is the audit log's `policy.set` / `policy.removed` records.
 */
export interface SubagentPolicyRow extends SubagentPolicy {
  subagent_id: string
  updated_at: Date
}

const COLUMNS =
  'subagent_id, expected_orchestrators, arbiter_orchestrator_id, deadline_seconds, fallback_policy, probe_id, updated_at'

/** Creates or replaces the sub-agent's policy. */
export function subagentPolicyUpsert(row: SubagentPolicyRow): Statement {
  return statement(
    `INSERT INTO subagent_policies (${COLUMNS}) VALUES ($1, $2::text[], $3, $4, $5, $6, $7)
     ON CONFLICT (subagent_id) DO UPDATE SET
       expected_orchestrators = EXCLUDED.expected_orchestrators,
       arbiter_orchestrator_id = EXCLUDED.arbiter_orchestrator_id,
       deadline_seconds = EXCLUDED.deadline_seconds,
       fallback_policy = EXCLUDED.fallback_policy,
       probe_id = EXCLUDED.probe_id,
       updated_at = EXCLUDED.updated_at`,
    [
      row.subagent_id,
      row.expected_orchestrators,
      row.arbiter_orchestrator_id,
      row.deadline_seconds,
      row.fallback_policy,
      row.probe_id,
      row.updated_at,
    ],
  )
}

export function subagentPolicyById(subagentId: string): Statement<SubagentPolicyRow> {
  return statement(`SELECT ${COLUMNS} FROM subagent_policies WHERE subagent_id = $1`, [subagentId])
}

/** Removes the sub-agent's policy, RETURNING the row removed, if there was one. */
export function subagentPolicyDelete(subagentId: string): Statement<SubagentPolicyRow> {
  return statement(`DELETE FROM subagent_policies WHERE subagent_id = $1 RETURNING ${COLUMNS}`, [subagentId])
}
