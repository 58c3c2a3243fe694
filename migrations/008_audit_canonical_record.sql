-- The database holds every column of an audit record equal to its stored canonical text (migration 007), not
-- only `data`. `audit verify` then reads each record's text, seq and hashes, and nothing else: it hashes the text
-- (the bytes the record's hash and leaf cover) and need not rebuild it from the columns or compare them with it,
-- which was a third of what verifying a large log cost. jsonb equality compares values, not bytes; the bytes are
-- what the hashes check. `at` is written as the API writes it (RFC 3339, milliseconds, UTC).
--
-- Verify relies on this constraint only while it is present, validated and worded as here (otherwise it rebuilds
-- every record's text from its columns and finds any that disagree). It is validated below, unless a stored
-- record already disagrees with its text, or has a text that is not JSON: the service still starts, and verify
-- reports that record. Adding and validating it locks audit_records until this migration commits (about 27 s per
-- million records on two cores): audit reads and the sequencer of replicas still running wait meanwhile.
-- IF EXISTS: someone may have dropped it (the way to edit `data` behind its back); the service must still start.
ALTER TABLE audit_records DROP CONSTRAINT IF EXISTS audit_records_canonical_data;

ALTER TABLE audit_records
  ADD CONSTRAINT audit_records_canonical_record CHECK (
    canonical IS NULL OR canonical::jsonb = jsonb_build_object(
      'actor', actor,
      'at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'data', data,
      'kind', kind,
      'manifest_id', manifest_id,
      'orchestrator_id', orchestrator_id,
      'outcome_id', outcome_id,
      'prev_hash', prev_hash,
      'seq', seq,
      'subagent_id', subagent_id,
      'verdict', verdict
    )
  ) NOT VALID;

DO $$
BEGIN
  ALTER TABLE audit_records VALIDATE CONSTRAINT audit_records_canonical_record;
EXCEPTION WHEN check_violation OR data_exception THEN
  RAISE WARNING 'an audit record disagrees with its stored canonical text; audit verify will report it';
END
$$;
