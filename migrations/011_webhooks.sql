-- Webhooks: decisions pushed to the orchestrators that wait for them (docs/webhooks.md).
--
-- A decision's event is written by the database itself, at the commit of the transaction that stored the
-- manifest or changed the escalation (deferred constraint triggers below): a committed decision always has its
-- deliveries, a rolled-back one never has any, and no code path that writes manifests can forget them.

-- Registered webhooks. secret: the current signing secret (`whsec_…`); previous_secret signs too until
-- previous_secret_expires_at (a rotation's overlap). filter: {kind?, subagent_id?, verdict?, directive?,
-- orchestrator_id?}, AND-ed. failing_since: the first failed attempt since the last success (a webhook whose every
-- attempt fails for long enough is disabled).
CREATE TABLE webhooks (
  id uuid PRIMARY KEY,
  list_seq bigserial UNIQUE,
  url text NOT NULL,
  events text[] NOT NULL CHECK (cardinality(events) >= 1),
  filter jsonb NOT NULL DEFAULT '{}',
  description text,
  secret text NOT NULL,
  previous_secret text,
  previous_secret_expires_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  disabled_at timestamptz,
  disabled_reason text,
  failing_since timestamptz
);

-- One row per event that at least one webhook wanted. type: manifest.issued | escalation.opened |
-- escalation.resolved | webhook.test. manifest_id: the manifest issued, or the HALT of the escalation; case_kind +
-- case_id: the escalation's case; webhook_id: the one webhook a test event is for. The payload is built from these
-- at each attempt (the manifest's audit_seq is assigned after it commits); its id is the `webhook-id` header.
CREATE TABLE webhook_events (
  id uuid PRIMARY KEY,
  type text NOT NULL CHECK (type IN ('manifest.issued', 'escalation.opened', 'escalation.resolved', 'webhook.test')),
  manifest_id uuid,
  case_kind text,
  case_id uuid,
  webhook_id uuid,
  created_at timestamptz NOT NULL
);

-- One delivery of one event to one webhook. status pending → succeeded | failed. next_attempt_at: when it is due
-- (while an attempt is in flight: the lease deadline, after which another replica may take it over);
-- lease_token: the attempt in flight, so an attempt whose lease has passed cannot record its result over a newer
-- one. retry_from: where ARBITER_WEBHOOK_MAX_AGE_HOURS is counted from (creation, or the last redelivery).
CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY,
  list_seq bigserial UNIQUE,
  webhook_id uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id uuid NOT NULL REFERENCES webhook_events (id),
  status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  lease_token uuid,
  last_status_code integer,
  last_error text,
  last_attempt_at timestamptz,
  created_at timestamptz NOT NULL,
  retry_from timestamptz NOT NULL
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, list_seq);
CREATE INDEX webhook_deliveries_status_idx ON webhook_deliveries (webhook_id, status, list_seq);

-- Whether orchestrator p_orchestrator takes part in the case: it is the manifest's action_owner, or — by the case's
-- kind — an outcome's expected or interpreting orchestrator, or the owner of a fan-out or review.
CREATE FUNCTION webhook_takes_part(p_case_kind text, p_case_id uuid, p_manifest_id uuid, p_orchestrator text)
RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT CASE p_case_kind
      WHEN 'outcome' THEN
        EXISTS (SELECT 1 FROM outcomes o WHERE o.id = p_case_id AND p_orchestrator = ANY (o.expected_orchestrators))
        OR EXISTS (SELECT 1 FROM interpretations i WHERE i.outcome_id = p_case_id AND i.orchestrator_id = p_orchestrator)
      WHEN 'fanout' THEN EXISTS (SELECT 1 FROM fanouts f WHERE f.id = p_case_id AND f.orchestrator_id = p_orchestrator)
      WHEN 'review' THEN EXISTS (SELECT 1 FROM reviews r WHERE r.id = p_case_id AND r.orchestrator_id = p_orchestrator)
      ELSE false
    END
    OR EXISTS (SELECT 1 FROM manifests m WHERE m.id = p_manifest_id AND m.manifest_jcs::jsonb ->> 'action_owner' = p_orchestrator)
$$;

-- Stores the event and a pending delivery for every enabled webhook that subscribes to it and whose filter the
-- manifest (for escalations: the HALT) matches; nothing when none does. Wakes the delivery workers.
CREATE FUNCTION webhook_enqueue(p_type text, p_manifest_id uuid, p_case_kind text, p_case_id uuid)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  m record;
  targets uuid[];
  event uuid;
BEGIN
  -- The common case, no webhook at all, costs one index-free look at a small table.
  IF NOT EXISTS (SELECT 1 FROM webhooks WHERE disabled_at IS NULL AND p_type = ANY (events)) THEN
    RETURN;
  END IF;
  SELECT kind, case_kind, case_id, subagent_id, verdict, directive INTO m FROM manifests WHERE id = p_manifest_id;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  -- FOR KEY SHARE: a webhook being deleted is waited for and then left out (a deleted row no longer matches), so
  -- the deliveries inserted below never reference a deleted webhook; changes other than deletion do not block.
  SELECT array_agg(t.id ORDER BY t.list_seq) INTO targets
  FROM (
    SELECT w.id, w.list_seq FROM webhooks w
    WHERE w.disabled_at IS NULL AND p_type = ANY (w.events)
      AND (w.filter ->> 'kind' IS NULL OR w.filter ->> 'kind' = m.kind)
      AND (w.filter ->> 'subagent_id' IS NULL OR w.filter ->> 'subagent_id' = m.subagent_id)
      AND (w.filter ->> 'verdict' IS NULL OR w.filter ->> 'verdict' = m.verdict)
      AND (w.filter ->> 'directive' IS NULL OR w.filter ->> 'directive' = m.directive)
      AND (w.filter ->> 'orchestrator_id' IS NULL
           OR webhook_takes_part(m.case_kind, m.case_id, p_manifest_id, w.filter ->> 'orchestrator_id'))
    FOR KEY SHARE OF w) t;
  IF targets IS NULL THEN
    RETURN;
  END IF;
  event := gen_random_uuid();
  INSERT INTO webhook_events (id, type, manifest_id, case_kind, case_id, created_at)
  VALUES (event, p_type, p_manifest_id, p_case_kind, p_case_id, clock_timestamp());
  INSERT INTO webhook_deliveries (id, webhook_id, event_id, status, next_attempt_at, created_at, retry_from)
  SELECT gen_random_uuid(), t, event, 'pending', now(), now(), now() FROM unnest(targets) AS t;
  PERFORM pg_notify('arbiter_webhooks', '');
END
$$;

CREATE FUNCTION webhook_manifest_issued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM webhook_enqueue('manifest.issued', NEW.id, NEW.case_kind, NEW.case_id);
  RETURN NULL;
END
$$;

CREATE FUNCTION webhook_escalation_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM webhook_enqueue('escalation.opened', NEW.manifest_id, NEW.case_kind, NEW.case_id);
  ELSIF OLD.status = 'open' AND NEW.status = 'resolved' THEN
    PERFORM webhook_enqueue('escalation.resolved', NEW.manifest_id, NEW.case_kind, NEW.case_id);
  END IF;
  RETURN NULL;
END
$$;

-- Deferred to the commit: an escalation is written before its HALT manifest, and a case's interpretations and
-- rows may change later in the same transaction; at the commit every row the filter reads is there.
CREATE CONSTRAINT TRIGGER manifests_webhook_event AFTER INSERT ON manifests
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION webhook_manifest_issued();
CREATE CONSTRAINT TRIGGER escalations_webhook_event AFTER INSERT OR UPDATE OF status ON escalations
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION webhook_escalation_changed();
