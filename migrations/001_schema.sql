-- Arbiter schema. Forward-only: later changes are new numbered files.

CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  role text NOT NULL CHECK (role IN ('orchestrator', 'dashboard', 'ops', 'admin')),
  orchestrator_ids text[] NOT NULL DEFAULT '{}',
  label text NOT NULL,
  -- sha256 of the secret: keys are 256-bit random, so a fast hash cannot be brute-forced; the secret is never stored.
  key_hash text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  revoked_at timestamptz
);

-- The public half of every key that ever signed, so the JWKS keeps retired kids and old manifests verify.
CREATE TABLE signing_keys (
  kid text PRIMARY KEY,
  public_jwk jsonb NOT NULL,
  first_used_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE probes (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  version integer NOT NULL,
  definition jsonb NOT NULL,
  probe_digest text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE TABLE probe_versions (
  probe_id uuid NOT NULL REFERENCES probes (id),
  version integer NOT NULL,
  definition jsonb NOT NULL,
  probe_digest text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (probe_id, version)
);

CREATE TABLE outcomes (
  id uuid PRIMARY KEY,
  -- Insertion order for stable cursor pagination.
  list_seq bigserial UNIQUE,
  subagent_id text NOT NULL,
  run_id text NOT NULL,
  -- sha256 of the creation request: the same body again is idempotent, a different one is a conflict.
  request_digest text NOT NULL,
  expected_orchestrators text[] NOT NULL,
  deadline timestamptz,
  arbiter_orchestrator_id text,
  probe_id uuid REFERENCES probes (id),
  probe_params jsonb,
  fallback_policy text NOT NULL CHECK (fallback_policy IN ('escalate', 'strictest_wins')),
  status text NOT NULL CHECK (status IN ('open', 'decided', 'halted', 'resolved')),
  evidence_hash text NOT NULL,
  manifest_id uuid,
  reevaluation_rounds integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  UNIQUE (subagent_id, run_id)
);
CREATE INDEX outcomes_subagent_idx ON outcomes (subagent_id, list_seq);
CREATE INDEX outcomes_status_idx ON outcomes (status, list_seq);

CREATE TABLE evidence_items (
  outcome_id uuid NOT NULL REFERENCES outcomes (id),
  item_hash text NOT NULL,
  -- Order of first submission, so GET returns items as they arrived.
  position integer NOT NULL,
  item jsonb NOT NULL,
  PRIMARY KEY (outcome_id, item_hash)
);

CREATE TABLE evidence_versions (
  outcome_id uuid NOT NULL REFERENCES outcomes (id),
  evidence_hash text NOT NULL,
  version integer NOT NULL,
  item_hashes text[] NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (outcome_id, evidence_hash)
);

CREATE TABLE interpretations (
  id uuid PRIMARY KEY,
  outcome_id uuid NOT NULL REFERENCES outcomes (id),
  orchestrator_id text NOT NULL,
  revision integer NOT NULL,
  -- The criterion document when given (has_criterion distinguishes a JSON null document from "hash only").
  has_criterion boolean NOT NULL,
  success_criterion jsonb,
  success_criterion_signature text NOT NULL,
  outcome_interpretation text NOT NULL CHECK (outcome_interpretation IN ('success', 'partial', 'failure')),
  evidence_hash text NOT NULL,
  intended_action jsonb,
  rationale text,
  received_at timestamptz NOT NULL,
  api_key_id uuid,
  UNIQUE (outcome_id, orchestrator_id, revision)
);

-- Submissions that arrived after a final decision: kept for the record, never part of a decision.
CREATE TABLE dissents (
  id uuid PRIMARY KEY,
  outcome_id uuid NOT NULL REFERENCES outcomes (id),
  orchestrator_id text NOT NULL,
  manifest_id uuid NOT NULL,
  submission jsonb NOT NULL,
  received_at timestamptz NOT NULL,
  api_key_id uuid
);
CREATE INDEX dissents_outcome_idx ON dissents (outcome_id);

CREATE TABLE manifests (
  id uuid PRIMARY KEY,
  outcome_id uuid NOT NULL REFERENCES outcomes (id),
  subagent_id text NOT NULL,
  verdict text NOT NULL,
  directive text NOT NULL CHECK (directive IN ('PROCEED', 'REEVALUATE', 'HALT')),
  final boolean NOT NULL,
  -- Fingerprint of the decision's inputs: evaluating again over unchanged inputs returns the same manifest.
  inputs_digest text NOT NULL,
  issued_at timestamptz NOT NULL,
  audit_seq bigint NOT NULL UNIQUE,
  -- The signed manifest as JCS text: exactly the bytes the JWS covers.
  manifest_jcs text NOT NULL,
  manifest_digest text NOT NULL,
  jws text NOT NULL
);
CREATE INDEX manifests_outcome_idx ON manifests (outcome_id, audit_seq);
CREATE INDEX manifests_subagent_idx ON manifests (subagent_id, audit_seq);
CREATE INDEX manifests_issued_idx ON manifests (issued_at, audit_seq);
-- One decision per outcome: at most one final machine decision, at most one human resolution.
CREATE UNIQUE INDEX manifests_one_final_decision ON manifests (outcome_id) WHERE final AND verdict <> 'HUMAN_RESOLVED';
CREATE UNIQUE INDEX manifests_one_resolution ON manifests (outcome_id) WHERE verdict = 'HUMAN_RESOLVED';
-- One REEVALUATE manifest per set of inputs.
CREATE UNIQUE INDEX manifests_one_per_inputs ON manifests (outcome_id, inputs_digest) WHERE NOT final;

-- Probe executions claimed per evaluation round, so 20 concurrent evaluate calls run the probe once.
CREATE TABLE probe_runs (
  outcome_id uuid NOT NULL REFERENCES outcomes (id),
  inputs_digest text NOT NULL,
  claimed_until timestamptz NOT NULL,
  record jsonb,
  PRIMARY KEY (outcome_id, inputs_digest)
);

CREATE TABLE escalations (
  outcome_id uuid PRIMARY KEY REFERENCES outcomes (id),
  manifest_id uuid NOT NULL,
  status text NOT NULL CHECK (status IN ('open', 'resolved')),
  opened_at timestamptz NOT NULL,
  resolved_at timestamptz,
  resolution_manifest_id uuid,
  list_seq bigserial UNIQUE
);
CREATE INDEX escalations_status_idx ON escalations (status, list_seq);

-- The append-only, hash-chained audit log (docs/audit-log.md).
CREATE TABLE audit_records (
  seq bigint PRIMARY KEY,
  at timestamptz NOT NULL,
  kind text NOT NULL,
  actor text NOT NULL,
  outcome_id uuid,
  manifest_id uuid,
  subagent_id text,
  orchestrator_id text,
  verdict text,
  data jsonb NOT NULL,
  prev_hash text NOT NULL,
  hash text NOT NULL
);
CREATE INDEX audit_outcome_idx ON audit_records (outcome_id, seq) WHERE outcome_id IS NOT NULL;
CREATE INDEX audit_subagent_idx ON audit_records (subagent_id, seq) WHERE subagent_id IS NOT NULL;
CREATE INDEX audit_orchestrator_idx ON audit_records (orchestrator_id, seq) WHERE orchestrator_id IS NOT NULL;
CREATE INDEX audit_kind_idx ON audit_records (kind, seq);
CREATE INDEX audit_verdict_idx ON audit_records (verdict, seq) WHERE verdict IS NOT NULL;
CREATE INDEX audit_at_idx ON audit_records (at, seq);

-- The chain head: one row, locked FOR UPDATE by every append, which is what serializes appends and keeps seq
-- gapless across any number of replicas.
CREATE TABLE audit_head (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  seq bigint NOT NULL,
  hash text NOT NULL
);
INSERT INTO audit_head (id, seq, hash)
VALUES (true, 0, 'sha256:0000000000000000000000000000000000000000000000000000000000000000');

CREATE FUNCTION audit_records_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_records is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_records_no_update_delete
  BEFORE UPDATE OR DELETE ON audit_records
  FOR EACH ROW EXECUTE FUNCTION audit_records_refuse_change();
CREATE TRIGGER audit_records_no_truncate
  BEFORE TRUNCATE ON audit_records
  FOR EACH STATEMENT EXECUTE FUNCTION audit_records_refuse_change();
-- ENABLE ALWAYS: the triggers fire even under session_replication_role = replica.
ALTER TABLE audit_records ENABLE ALWAYS TRIGGER audit_records_no_update_delete;
ALTER TABLE audit_records ENABLE ALWAYS TRIGGER audit_records_no_truncate;
