import assert from 'node:assert/strict'
import pg from 'pg'

/**
 * Checks straight in the database that nothing was half-written: the audit chain is one gapless line with no
 * fork, the sequencer left nothing behind and the tree holds every record, and every row a change produced has
 * its audit record (a crash or a race cannot leave one without the other). Call it after an audit read through
 * the API, which waits for the sequencer. Returns the figures it checked.
 */
export async function assertStoreIntegrity(connectionString: string) {
  const client = new pg.Client({ connectionString })
  await client.connect()
  try {
    const one = async (sql: string) => (await client.query(sql)).rows[0] as { [column: string]: number }
    const chain = await one(`SELECT count(*)::int AS n, coalesce(min(seq), 0)::int AS min,
        coalesce(max(seq), 0)::int AS max, count(DISTINCT prev_hash)::int AS prevs,
        (SELECT seq FROM audit_head)::int AS head FROM audit_records`)
    assert.equal(chain.n, chain.max, `audit seq is gapless: ${chain.n} records, max seq ${chain.max}`)
    assert.ok(chain.n === 0 || chain.min === 1, 'audit seq starts at 1')
    assert.equal(chain.prevs, chain.n, 'no two records extend the same predecessor (no fork)')
    assert.equal(chain.head, chain.max, 'the chain head is the last record')
    const log = await one(`SELECT (SELECT count(*) FROM audit_intake)::int AS intake_left,
        (SELECT tree_size FROM audit_head)::int AS tree_size,
        (SELECT count(*) FROM merkle_nodes WHERE level = 0)::int AS leaves,
        (SELECT count(*) FROM manifests WHERE audit_seq IS NULL)::int AS unplaced_manifests`)
    assert.deepEqual(
      log,
      { intake_left: 0, tree_size: chain.n, leaves: chain.n, unplaced_manifests: 0 },
      'every committed entry is sequenced, a leaf of the tree, and every manifest has its audit_seq',
    )
    const linked = await one(`SELECT count(*)::int AS n FROM audit_records r
        JOIN audit_records p ON p.seq = r.seq - 1 WHERE r.prev_hash <> p.hash`)
    assert.equal(linked.n, 0, 'every record links to the hash of the one before')

    const orphans = await one(`SELECT
        (SELECT count(*) FROM outcomes o WHERE NOT EXISTS (SELECT 1 FROM audit_records a
           WHERE a.kind = 'outcome.created' AND a.outcome_id = o.id))::int AS outcomes,
        (SELECT count(*) FROM interpretations i WHERE NOT EXISTS (SELECT 1 FROM audit_records a
           WHERE a.kind = 'interpretation.recorded' AND a.data->>'interpretation_id' = i.id::text))::int
           AS interpretations,
        (SELECT count(*) FROM manifests m WHERE NOT EXISTS (SELECT 1 FROM audit_records a
           WHERE a.kind = 'manifest.issued' AND a.manifest_id = m.id AND a.seq = m.audit_seq))::int AS manifests,
        (SELECT count(*) FROM escalations e WHERE NOT EXISTS (SELECT 1 FROM audit_records a
           WHERE a.kind = 'escalation.opened' AND a.manifest_id = e.manifest_id))::int AS escalations,
        (SELECT count(*) FROM dissents d WHERE NOT EXISTS (SELECT 1 FROM audit_records a
           WHERE a.kind = 'dissent.recorded' AND a.outcome_id = d.outcome_id))::int AS dissents,
        (SELECT count(*) FROM fanouts f WHERE NOT EXISTS (SELECT 1 FROM audit_records a
           WHERE a.kind = 'fanout.created' AND a.data->>'fanout_id' = f.id::text))::int AS fanouts,
        (SELECT count(*) FROM fanout_results r WHERE NOT EXISTS (SELECT 1 FROM audit_records a
           WHERE a.kind = 'result.recorded' AND a.data->>'fanout_id' = r.fanout_id::text
             AND a.data->>'subtask_id' = r.subtask_id AND (a.data->>'revision')::int = r.revision))::int
           AS fanout_results,
        (SELECT count(*) FROM audit_records a WHERE a.kind = 'manifest.issued'
           AND NOT EXISTS (SELECT 1 FROM manifests m WHERE m.id = a.manifest_id))::int AS records_without_manifest,
        (SELECT count(*) FROM outcomes o WHERE o.manifest_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM manifests m WHERE m.id = o.manifest_id))::int
        + (SELECT count(*) FROM fanouts f WHERE f.manifest_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM manifests m WHERE m.id = f.manifest_id))::int AS dangling_manifest_ids`)
    assert.deepEqual(
      orphans,
      {
        outcomes: 0,
        interpretations: 0,
        manifests: 0,
        escalations: 0,
        dissents: 0,
        fanouts: 0,
        fanout_results: 0,
        records_without_manifest: 0,
        dangling_manifest_ids: 0,
      },
      'every change committed together with its audit record',
    )
    const decisions = await one(`SELECT
        (SELECT count(*) FROM (SELECT case_id FROM manifests WHERE final AND verdict <> 'HUMAN_RESOLVED'
           GROUP BY case_kind, case_id, case_round HAVING count(*) > 1) x)::int AS twice_decided,
        (SELECT count(*) FROM (SELECT case_id FROM manifests WHERE verdict = 'HUMAN_RESOLVED'
           GROUP BY case_kind, case_id HAVING count(*) > 1) x)::int AS twice_resolved`)
    assert.deepEqual(decisions, { twice_decided: 0, twice_resolved: 0 }, 'one decision per outcome')
    const counts = await one(`SELECT (SELECT count(*) FROM outcomes)::int AS outcomes,
        (SELECT count(*) FROM manifests)::int AS manifests`)
    return { auditRecords: chain.n ?? 0, outcomes: counts.outcomes ?? 0, manifests: counts.manifests ?? 0 }
  } finally {
    await client.end()
  }
}
