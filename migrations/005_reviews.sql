-- Reviews: a change judged by a panel of judge agents in one of four modes (docs/reviews.md). A review is a case
-- of the engine: its manifests, one feed with every other kind's, are in `manifests` with case_kind 'review' and
-- case_round = the revision they decide, so "one final decision per round" holds per revision.

CREATE TABLE reviews (
  id uuid PRIMARY KEY,
  -- Insertion order for stable cursor pagination.
  list_seq bigserial UNIQUE,
  orchestrator_id text NOT NULL,
  review_key text NOT NULL,
  -- sha256(JCS(creation body)): the same body again is idempotent, a different one under the key is a conflict.
  request_digest text NOT NULL,
  mode text NOT NULL CHECK (mode IN ('do_and_judge', 'two_stage', 'debate', 'council')),
  -- The subject currently under review {digest, description, uri}; a revision replaces it.
  subject jsonb NOT NULL,
  implementer jsonb NOT NULL,
  -- The panel as submitted, in submitted order: [{judge_id, model, context_id, stage, role}].
  judges jsonb NOT NULL,
  -- 0 at creation; a revision answers a REVISE, at most twice.
  revision integer NOT NULL DEFAULT 0 CHECK (revision BETWEEN 0 AND 2),
  status text NOT NULL CHECK (status IN ('open', 'decided', 'handed_back')),
  -- The latest manifest of the review, with the revision it decided and its directive, so the state rules
  -- (may this verdict or revision be taken?) read one row.
  manifest_id uuid,
  manifest_revision integer,
  manifest_directive text,
  created_at timestamptz NOT NULL,
  UNIQUE (orchestrator_id, review_key)
);
CREATE INDEX reviews_orchestrator_idx ON reviews (orchestrator_id, list_seq);
CREATE INDEX reviews_status_idx ON reviews (status, list_seq);

-- Every verdict a judge returned. A judge has one verdict per revision; only a NEEDS_CONTEXT verdict may be
-- replaced once the caller answered, by a new row with the next `attempt`. The unique key is what makes one of
-- two racing verdicts of a judge win, whatever else serializes them.
CREATE TABLE review_verdicts (
  id uuid PRIMARY KEY,
  review_id uuid NOT NULL REFERENCES reviews (id),
  revision integer NOT NULL,
  judge_id text NOT NULL,
  attempt integer NOT NULL CHECK (attempt >= 1),
  status text NOT NULL CHECK (status IN ('DONE', 'DONE_WITH_CONCERNS', 'NEEDS_CONTEXT', 'BLOCKED')),
  -- The body as submitted (the status envelope, judge_id, revision, findings).
  body jsonb NOT NULL,
  -- sha256(JCS(body as submitted)), computed when it arrived.
  verdict_digest text NOT NULL,
  received_at timestamptz NOT NULL,
  api_key_id uuid,
  UNIQUE (review_id, revision, judge_id, attempt)
);

-- A review's story (GET /v1/audit/reviews/{id}, /v1/audit/records?review_id=): its records carry data.review_id.
CREATE INDEX audit_review_idx ON audit_records ((data->>'review_id'), seq) WHERE data->>'review_id' IS NOT NULL;
