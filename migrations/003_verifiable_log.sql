-- The verifiable log: audit records are written to an intake table in each change's own transaction and given
-- their place in the log (seq, chain, Merkle tree) by one background sequencer. See docs/log-format.md.

-- The log's identity, created once with the database: it names the log in checkpoints (the default origin).
CREATE TABLE log_identity (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  log_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO log_identity (log_id) VALUES (gen_random_uuid());

-- Committed audit entries waiting for the sequencer, in no particular order of commit: `id` only orders the
-- sequencer's reads. Every column is the record's field of the same name; seq, prev_hash and hash are added
-- when the entry is sequenced. Writers insert concurrently without any shared lock.
CREATE TABLE audit_intake (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL,
  kind text NOT NULL,
  actor text NOT NULL,
  outcome_id uuid,
  manifest_id uuid,
  subagent_id text,
  orchestrator_id text,
  verdict text,
  data jsonb NOT NULL
);

-- Entries are never edited, and only the sequencer removes them, in the transaction that writes their records:
-- it marks that transaction with SET LOCAL arbiter.sequencer = 'on'. Anything else would lose a committed
-- change's record.
CREATE FUNCTION audit_intake_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('arbiter.sequencer', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'audit_intake is drained only by the sequencer: % refused', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_intake_no_update_delete
  BEFORE UPDATE OR DELETE ON audit_intake
  FOR EACH ROW EXECUTE FUNCTION audit_intake_guard();
CREATE TRIGGER audit_intake_no_truncate
  BEFORE TRUNCATE ON audit_intake
  FOR EACH STATEMENT EXECUTE FUNCTION audit_intake_guard();
ALTER TABLE audit_intake ENABLE ALWAYS TRIGGER audit_intake_no_update_delete;
ALTER TABLE audit_intake ENABLE ALWAYS TRIGGER audit_intake_no_truncate;

-- Every perfect subtree of the RFC 9162 tree over the records: level 0 holds the leaf hashes (leaf seq is at
-- idx seq - 1), level L idx i the subtree over leaves [i * 2^L, (i + 1) * 2^L). A node is written once, when its
-- last leaf is appended, and never changes: any root or proof is a handful of these rows.
CREATE TABLE merkle_nodes (
  level smallint NOT NULL CHECK (level >= 0 AND level < 63),
  idx bigint NOT NULL CHECK (idx >= 0),
  hash bytea NOT NULL CHECK (length(hash) = 32),
  PRIMARY KEY (level, idx)
);

-- The tree's size: records with seq <= tree_size are leaves. Equal to seq once the sequencer has caught up;
-- records written before the tree existed are added as leaves by the sequencer when it first runs.
ALTER TABLE audit_head ADD COLUMN tree_size bigint NOT NULL DEFAULT 0;

-- Signed checkpoints, one per tree size (replicas signing the same size at once keep the first).
-- checkpoint_jcs is the signed JSON exactly as the JWS covers it; note is the C2SP signed note.
CREATE TABLE audit_checkpoints (
  tree_size bigint PRIMARY KEY CHECK (tree_size >= 0),
  checkpoint_jcs text NOT NULL,
  note text NOT NULL,
  jws text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION verifiable_log_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER merkle_nodes_no_update_delete
  BEFORE UPDATE OR DELETE ON merkle_nodes
  FOR EACH ROW EXECUTE FUNCTION verifiable_log_refuse_change();
CREATE TRIGGER merkle_nodes_no_truncate
  BEFORE TRUNCATE ON merkle_nodes
  FOR EACH STATEMENT EXECUTE FUNCTION verifiable_log_refuse_change();
CREATE TRIGGER audit_checkpoints_no_update_delete
  BEFORE UPDATE OR DELETE ON audit_checkpoints
  FOR EACH ROW EXECUTE FUNCTION verifiable_log_refuse_change();
CREATE TRIGGER audit_checkpoints_no_truncate
  BEFORE TRUNCATE ON audit_checkpoints
  FOR EACH STATEMENT EXECUTE FUNCTION verifiable_log_refuse_change();
-- ENABLE ALWAYS: the triggers fire even under session_replication_role = replica.
ALTER TABLE merkle_nodes ENABLE ALWAYS TRIGGER merkle_nodes_no_update_delete;
ALTER TABLE merkle_nodes ENABLE ALWAYS TRIGGER merkle_nodes_no_truncate;
ALTER TABLE audit_checkpoints ENABLE ALWAYS TRIGGER audit_checkpoints_no_update_delete;
ALTER TABLE audit_checkpoints ENABLE ALWAYS TRIGGER audit_checkpoints_no_truncate;

-- Who runs the sequencer: the replica whose lease has not expired, by the database's clock. Renewed well
-- before it lapses; a replica that dies stops renewing, and another takes the lease once it has expired.
CREATE TABLE sequencer_lease (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  holder uuid,
  expires_at timestamptz NOT NULL
);
INSERT INTO sequencer_lease (holder, expires_at) VALUES (NULL, '-infinity');

-- A manifest's audit_seq is known once the sequencer has placed its manifest.issued record.
ALTER TABLE manifests ALTER COLUMN audit_seq DROP NOT NULL;
