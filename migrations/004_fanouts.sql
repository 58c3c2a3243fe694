-- Fan-outs: an orchestrator's question split into subtasks, each worker's returns, and (through the engine's
-- manifests, escalations and audit records) their reconciliation. See docs/fanouts.md.

-- One fan-out. request_digest: sha256 of the creation body with defaults filled in (the same body again is
-- idempotent, a different one under the same key a conflict). facts: as listed at creation. subtasks: as given,
-- `[{subtask_id, scope, facts}]`. policy: with every default filled in, as shown and hashed into policy_digest.
-- decomposition: the creation-time check `{uncovered_facts, overlaps}`. status: open (also after a REEVALUATE)
-- → decided | halted → resolved. manifest_id: the current manifest. closed_at: when the owner stopped waiting for
-- missing subtasks (`{"close": true}`).
CREATE TABLE fanouts (
  id uuid PRIMARY KEY,
  -- Insertion order for stable cursor pagination.
  list_seq bigserial UNIQUE,
  orchestrator_id text NOT NULL,
  fanout_key text NOT NULL,
  request_digest text NOT NULL,
  question text NOT NULL,
  facts text[] NOT NULL,
  subtasks jsonb NOT NULL,
  deadline timestamptz,
  policy jsonb NOT NULL,
  policy_digest text NOT NULL,
  decomposition jsonb NOT NULL,
  status text NOT NULL CHECK (status IN ('open', 'decided', 'halted', 'resolved')),
  manifest_id uuid,
  closed_at timestamptz,
  created_at timestamptz NOT NULL,
  UNIQUE (orchestrator_id, fanout_key)
);
CREATE INDEX fanouts_orchestrator_idx ON fanouts (orchestrator_id, list_seq);
CREATE INDEX fanouts_status_idx ON fanouts (status, list_seq);

-- Every revision of every subtask's result. body: the status envelope exactly as submitted (its claims are read
-- from it); result_digest: sha256(JCS(body)); late: received after the deadline.
CREATE TABLE fanout_results (
  fanout_id uuid NOT NULL REFERENCES fanouts (id),
  subtask_id text NOT NULL,
  revision integer NOT NULL CHECK (revision >= 1),
  status text NOT NULL CHECK (status IN ('DONE', 'DONE_WITH_CONCERNS', 'NEEDS_CONTEXT', 'BLOCKED')),
  body jsonb NOT NULL,
  result_digest text NOT NULL,
  late boolean NOT NULL,
  received_at timestamptz NOT NULL,
  api_key_id uuid,
  PRIMARY KEY (fanout_id, subtask_id, revision)
);

-- A fan-out's story: every audit record about it names it in data.fanout_id.
CREATE INDEX audit_fanout_idx ON audit_records ((data->>'fanout_id'), seq);
