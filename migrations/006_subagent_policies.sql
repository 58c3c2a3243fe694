-- Sub-agent policies: the rules an admin sets for every outcome of one sub-agent, so that whoever creates an
-- outcome first cannot exclude another orchestrator, appoint itself arbiter, pick the probe or choose the deadline
-- (docs/decision-procedures.md, "Sub-agent policies"). A policy is copied into each outcome when the outcome is
-- created: changing or removing it later touches no existing outcome. Its history is in the audit log
-- (`policy.set`, `policy.removed`); this table holds only the current policy of each sub-agent.

-- One policy per sub-agent. Every field is filled in: one the admin omitted holds its default (no arbiter, no
-- deadline, fallback `escalate`, no probe), and outcomes are locked to it all the same.
-- expected_orchestrators: sorted and unique. deadline_seconds: an outcome's deadline is its creation time plus
-- this. probe_id: the probe its outcomes run (their bodies supply only the params).
CREATE TABLE subagent_policies (
  subagent_id text PRIMARY KEY,
  expected_orchestrators text[] NOT NULL,
  arbiter_orchestrator_id text,
  deadline_seconds integer CHECK (deadline_seconds > 0),
  fallback_policy text NOT NULL CHECK (fallback_policy IN ('escalate', 'strictest_wins')),
  probe_id uuid REFERENCES probes (id),
  updated_at timestamptz NOT NULL
);
