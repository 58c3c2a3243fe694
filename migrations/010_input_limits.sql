-- What a fan-out's latest results add up to, kept on the fan-out row so that a new result is checked against the
-- fan-out's limits (claims and canonical bytes of its latest results, the bound on its next manifest) in the same
-- statement that writes it, under the row's lock (docs/limits.md). Each result row keeps its own part, so that a
-- revision replaces its subtask's previous part.
ALTER TABLE fanout_results
  ADD COLUMN claim_count integer NOT NULL DEFAULT 0,
  ADD COLUMN jcs_bytes bigint NOT NULL DEFAULT 0,
  ADD COLUMN manifest_weight bigint NOT NULL DEFAULT 0;

ALTER TABLE fanouts
  ADD COLUMN claims_total integer NOT NULL DEFAULT 0,
  ADD COLUMN results_bytes bigint NOT NULL DEFAULT 0,
  ADD COLUMN manifest_weight bigint NOT NULL DEFAULT 0,
  ADD COLUMN manifest_base bigint NOT NULL DEFAULT 0;

-- Results stored before: their parts estimated from the stored body (its text is about its canonical size; a
-- manifest holds each claim a few times over).
UPDATE fanout_results SET
  claim_count = coalesce(jsonb_array_length(CASE jsonb_typeof(body -> 'claims') WHEN 'array' THEN body -> 'claims' END), 0),
  jcs_bytes = octet_length(body::text),
  manifest_weight = 8 * octet_length(body::text);

UPDATE fanouts f SET
  claims_total = t.claims, results_bytes = t.bytes, manifest_weight = t.weight,
  manifest_base = 4 * (octet_length(f.subtasks::text) + octet_length(f.policy::text) + octet_length(f.decomposition::text)
                       + octet_length(array_to_string(f.facts, ',')) + 512) + 65536
FROM (
  SELECT fanout_id, sum(claim_count) AS claims, sum(jcs_bytes) AS bytes, sum(manifest_weight) AS weight
  FROM (SELECT DISTINCT ON (fanout_id, subtask_id) fanout_id, claim_count, jcs_bytes, manifest_weight
        FROM fanout_results ORDER BY fanout_id, subtask_id, revision DESC) latest
  GROUP BY fanout_id
) t
WHERE t.fanout_id = f.id;
UPDATE fanouts SET manifest_base = 4 * (octet_length(subtasks::text) + octet_length(policy::text)
    + octet_length(decomposition::text) + octet_length(array_to_string(facts, ',')) + 512) + 65536
WHERE manifest_base = 0;

-- What an outcome's first interpretations are judged against in the one statement that writes each
-- (docs/limits.md): an upper bound on its next manifest, the orchestrators interpreting it and those of them not
-- expected, the longest orchestrator id and the largest criterion weight among them, and its evidence items.
-- Anything else takes the outcome's row lock and sets them again exactly. Outcomes stored before start at the
-- limit, so that their next interpretation takes the lock and computes them.
ALTER TABLE outcomes
  ADD COLUMN manifest_bound bigint NOT NULL DEFAULT 4194304,
  ADD COLUMN interpreting integer NOT NULL DEFAULT 0,
  ADD COLUMN unexpected_orchestrators integer NOT NULL DEFAULT 16,
  ADD COLUMN longest_orchestrator_id integer NOT NULL DEFAULT 0,
  ADD COLUMN largest_criterion integer NOT NULL DEFAULT 0,
  ADD COLUMN evidence_items integer NOT NULL DEFAULT 1000;
