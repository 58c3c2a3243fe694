-- One engine, several case kinds. Manifests, escalations and ground-truth probe runs belonged to an outcome;
-- they now belong to a case named by its kind and id (`case_kind`, `case_id`), so every kind of disagreement
-- (outcomes today, fan-outs and reviews next) shares one manifest feed, one escalation queue and one probe-run
-- claim table. Existing rows are outcome cases. See docs/architecture.md.

-- Manifests ----------------------------------------------------------------------------------------------------

-- kind: the `kind` the manifest carries (outcome | reconciliation | review). case_round: which round of its case a
-- manifest decides — 0 for kinds decided once, a review's revision — so "one final decision" holds per round.
ALTER TABLE manifests
  ADD COLUMN kind text,
  ADD COLUMN case_kind text,
  ADD COLUMN case_id uuid,
  ADD COLUMN case_round integer NOT NULL DEFAULT 0;
UPDATE manifests SET kind = 'outcome', case_kind = 'outcome', case_id = outcome_id;
ALTER TABLE manifests
  ALTER COLUMN kind SET NOT NULL,
  ALTER COLUMN case_kind SET NOT NULL,
  ALTER COLUMN case_id SET NOT NULL,
  -- Not every kind has a sub-agent.
  ALTER COLUMN subagent_id DROP NOT NULL,
  -- The log position of the manifest's `manifest.issued` record; it can be assigned after the manifest is stored.
  ALTER COLUMN audit_seq DROP NOT NULL,
  -- Directives differ by kind (a review's APPLY, PAUSE, …); each kind's decision module owns its own.
  DROP CONSTRAINT manifests_directive_check;

DROP INDEX manifests_one_final_decision;
DROP INDEX manifests_one_resolution;
DROP INDEX manifests_one_per_inputs;
DROP INDEX manifests_outcome_idx;
ALTER TABLE manifests DROP COLUMN outcome_id;

CREATE INDEX manifests_case_idx ON manifests (case_kind, case_id, audit_seq);
CREATE INDEX manifests_kind_idx ON manifests (kind, audit_seq);
-- One decision per case and round: at most one final machine decision, at most one human resolution per case.
CREATE UNIQUE INDEX manifests_one_final_decision ON manifests (case_kind, case_id, case_round)
  WHERE final AND verdict <> 'HUMAN_RESOLVED';
CREATE UNIQUE INDEX manifests_one_resolution ON manifests (case_kind, case_id) WHERE verdict = 'HUMAN_RESOLVED';
-- One non-final manifest (REEVALUATE, PAUSE) per set of inputs.
CREATE UNIQUE INDEX manifests_one_per_inputs ON manifests (case_kind, case_id, case_round, inputs_digest)
  WHERE NOT final;

-- Escalations --------------------------------------------------------------------------------------------------

ALTER TABLE escalations ADD COLUMN case_kind text, ADD COLUMN case_id uuid;
UPDATE escalations SET case_kind = 'outcome', case_id = outcome_id;
ALTER TABLE escalations
  ALTER COLUMN case_kind SET NOT NULL,
  ALTER COLUMN case_id SET NOT NULL,
  DROP CONSTRAINT escalations_pkey;
ALTER TABLE escalations DROP COLUMN outcome_id;
-- A case HALTs at most once (a HALT is final and only a resolution follows it).
ALTER TABLE escalations ADD PRIMARY KEY (case_kind, case_id);
CREATE INDEX escalations_case_status_idx ON escalations (case_kind, status, list_seq);

-- Ground-truth probe runs, claimed per case and evaluation round ------------------------------------------------

ALTER TABLE probe_runs ADD COLUMN case_kind text, ADD COLUMN case_id uuid;
UPDATE probe_runs SET case_kind = 'outcome', case_id = outcome_id;
ALTER TABLE probe_runs
  ALTER COLUMN case_kind SET NOT NULL,
  ALTER COLUMN case_id SET NOT NULL,
  DROP CONSTRAINT probe_runs_pkey;
ALTER TABLE probe_runs DROP COLUMN outcome_id;
ALTER TABLE probe_runs ADD PRIMARY KEY (case_kind, case_id, inputs_digest);
