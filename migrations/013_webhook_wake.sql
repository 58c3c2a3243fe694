-- Webhooks: what storing a decision's deliveries costs its transaction (docs/webhooks.md).
--
-- The event and its deliveries are written by one statement, which also reads the manifest and locks the webhooks
-- it targets (FOR KEY SHARE, as before: a webhook being deleted is waited for and then left out).
--
-- A transaction that sends a NOTIFY takes a lock that PostgreSQL holds across all databases from before its commit
-- to after it, WAL flush included, so that notifications are queued in commit order: with one NOTIFY per decision,
-- concurrent decisions commit one at a time, each flushing the WAL alone instead of sharing the flushes. Now a
-- decision sends its NOTIFY only when no other is sending one at that moment (an advisory lock taken without
-- waiting; the constant below names it, beside those of src/db/migrate.ts and src/db/repositories/api-keys.ts).
-- One that skips it is committing at the same time as the one that notifies: the workers it wakes claim again as
-- soon as each attempt ends, and poll besides, so its deliveries are taken as well, at worst at the next poll.

CREATE OR REPLACE FUNCTION webhook_enqueue(p_type text, p_manifest_id uuid, p_case_kind text, p_case_id uuid)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  -- The common case, no webhook at all, costs one index-free look at a small table.
  IF NOT EXISTS (SELECT 1 FROM webhooks WHERE disabled_at IS NULL AND p_type = ANY (events)) THEN
    RETURN;
  END IF;
  WITH targets AS (
    SELECT w.id, w.list_seq FROM webhooks w JOIN manifests m ON m.id = p_manifest_id
    WHERE w.disabled_at IS NULL AND p_type = ANY (w.events)
      -- Every member the filter sets but orchestrator_id equals the manifest's.
      AND jsonb_strip_nulls(w.filter - 'orchestrator_id') <@ jsonb_build_object(
        'kind', m.kind, 'subagent_id', m.subagent_id, 'verdict', m.verdict, 'directive', m.directive)
      AND (w.filter ->> 'orchestrator_id' IS NULL
           OR webhook_takes_part(m.case_kind, m.case_id, p_manifest_id, w.filter ->> 'orchestrator_id'))
    FOR KEY SHARE OF w),
  event AS (
    INSERT INTO webhook_events (id, type, manifest_id, case_kind, case_id, created_at)
    SELECT gen_random_uuid(), p_type, p_manifest_id, p_case_kind, p_case_id, clock_timestamp()
    WHERE EXISTS (SELECT 1 FROM targets)
    RETURNING id)
  INSERT INTO webhook_deliveries (id, webhook_id, event_id, status, next_attempt_at, created_at, retry_from)
  SELECT gen_random_uuid(), t.id, event.id, 'pending', now(), now(), now()
  FROM targets t CROSS JOIN event ORDER BY t.list_seq;
  -- Wakes the workers, unless another decision is sending its NOTIFY at this moment: see the top of this file.
  IF FOUND AND pg_try_advisory_xact_lock(7246153003) THEN
    PERFORM pg_notify('arbiter_webhooks', '');
  END IF;
END
$$;
