-- Each audit record's canonical text: the JCS of the record without its hash, exactly the bytes its hash covers
-- after prev_hash (docs/log-format.md). The sequencer stores it beside the columns so that `audit verify` hashes
-- stored bytes instead of rebuilding the text from the columns (parsing `data` and canonicalizing it again), which
-- is most of what verifying a large log costs. The columns stay what queries read and what the API serves; verify
-- checks that each record's columns spell out its canonical text.
--
-- Records written before this migration have none (NULL): verify rebuilds theirs from the columns, as before.
ALTER TABLE audit_records ADD COLUMN canonical text;

-- `data` is the one column verify cannot compare with the text cheaply (jsonb prints differently from JCS), so
-- the database holds them equal. verify relies on this constraint only while it is present, validated and worded
-- as here; otherwise it rebuilds every record's text from the columns.
ALTER TABLE audit_records
  ADD CONSTRAINT audit_records_canonical_data CHECK (canonical IS NULL OR (canonical::jsonb -> 'data') = data);
