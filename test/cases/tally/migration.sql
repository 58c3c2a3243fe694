-- The tally kind's own tables, as a migration of its own would create them; the test applies it.
CREATE TABLE tallies (
  id uuid PRIMARY KEY,
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'decided', 'halted', 'resolved')),
  manifest_id uuid,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tally_votes (
  tally_id uuid NOT NULL REFERENCES tallies (id),
  voter text NOT NULL,
  choice text NOT NULL,
  PRIMARY KEY (tally_id, voter)
);

-- A tally's story: every audit record about it names it in data.tally_id.
CREATE INDEX audit_tally_idx ON audit_records ((data->>'tally_id'), seq) WHERE data->>'tally_id' IS NOT NULL;
