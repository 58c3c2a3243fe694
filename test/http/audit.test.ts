import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { compactVerify, createLocalJWKSet } from 'jose'
import pg from 'pg'
import { canonicalTextGuard, verifyLog } from '../../src/audit-log/verify-log.ts'
import { registeredCaseSchemas } from '../../src/cases/registry.ts'
import type { Queryable } from '../../src/db/pool.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createTestDatabase } from '../helpers/database.ts'
import { clientHash, createOutcome, evaluate, haltedOutcome } from '../helpers/fixtures.ts'

const halted = haltedOutcome

/** Runs `fn` on a direct connection, as a database superuser would have one; closed before the database is dropped. */
async function asSuperuser(app: TestApp, fn: (client: pg.Client) => Promise<void>) {
  const client = new pg.Client({ connectionString: app.db.connectionString })
  client.on('error', () => {})
  await client.connect()
  try {
    await fn(client)
  } finally {
    await client.end()
  }
}

async function setup(
  t: Parameters<typeof buildTestApp>[0],
  database?: Awaited<ReturnType<typeof createTestDatabase>>,
) {
  const app = await buildTestApp(t, database ? { database } : {})
  return {
    app,
    a: await app.key('orchestrator', ['orch-a']),
    b: await app.key('orchestrator', ['orch-b']),
    ops: await app.key('ops'),
  }
}

describe('the audit log', () => {
  it('chains every change and tells one outcome its whole story', async (t) => {
    const { app, a, b, ops } = await setup(t)
    const { outcome, manifest } = await halted(app, a, b)
    const story = (
      await app.request(ops, { method: 'GET', url: `/v1/audit/outcomes/${outcome.outcome_id}` })
    ).json()
    assert.equal(story.status, 'halted')
    assert.equal(story.manifest.manifest.manifest_id, manifest.manifest_id)
    assert.deepEqual(
      story.records.map((r: { kind: string }) => r.kind),
      [
        'outcome.created',
        'interpretation.recorded',
        'interpretation.recorded',
        'manifest.issued',
        'escalation.opened',
      ],
    )
    const issued = story.records.find((r: { kind: string }) => r.kind === 'manifest.issued')
    assert.equal(issued.seq, story.manifest.audit_seq, "the envelope names its record's seq")
    assert.equal(issued.verdict, 'CRITERIA_DIFFER')
    assert.deepEqual(issued.data, {
      manifest_digest: clientHash(manifest),
      directive: 'HALT',
      kind: 'outcome',
    })
    // A first interpretation's record takes the subagent and the evidence version judged from the outcome row, in
    // the statement that writes the interpretation.
    const interpreted = story.records.filter((r: { kind: string }) => r.kind === 'interpretation.recorded')
    assert.deepEqual(
      interpreted.map((r: Record<string, unknown> & { data: Record<string, unknown> }) => ({
        outcome_id: r.outcome_id,
        subagent_id: r.subagent_id,
        orchestrator_id: r.orchestrator_id,
        manifest_id: r.manifest_id,
        verdict: r.verdict,
        revision: r.data.revision,
        evidence_hash: r.data.evidence_hash,
      })),
      ['orch-a', 'orch-b'].map((orchestrator) => ({
        outcome_id: outcome.outcome_id,
        subagent_id: 'refund-agent',
        orchestrator_id: orchestrator,
        manifest_id: null,
        verdict: null,
        revision: 1,
        evidence_hash: outcome.evidence_hash,
      })),
    )
    // Each record hashes as documented: sha256(prev_hash + JCS(record without hash)).
    const all = (await app.request(ops, { method: 'GET', url: '/v1/audit/records?limit=500' })).json().items
    let prev = `sha256:${'0'.repeat(64)}`
    for (const [index, record] of all.entries()) {
      assert.equal(record.seq, index + 1)
      assert.equal(record.prev_hash, prev)
      const { hash, ...rest } = record
      const canonical = (await import('canonicalize')).default(rest)!
      const expected = `sha256:${(await import('node:crypto'))
        .createHash('sha256')
        .update(prev + canonical)
        .digest('hex')}`
      assert.equal(hash, expected)
      prev = hash
    }
    const verify = (await app.request(ops, { method: 'GET', url: '/v1/audit/verify' })).json()
    assert.deepEqual(verify, {
      ok: true,
      checked: all.length,
      head_seq: all.length,
      head_hash: prev,
      tree_size: all.length,
      root_hash: verify.root_hash,
      checkpoints_checked: verify.checkpoints_checked,
      first_bad_seq: null,
    })
  })

  it('filters, pages with stable cursors while appends continue, and streams NDJSON', async (t) => {
    const { app, a, b, ops } = await setup(t)
    for (let i = 0; i < 3; i++) await halted(app, a, b)
    const page1 = (
      await app.request(ops, { method: 'GET', url: '/v1/audit/records?kind=interpretation.recorded&limit=4' })
    ).json()
    assert.equal(page1.items.length, 4)
    await halted(app, a, b) // appends between pages
    const page2 = (
      await app.request(ops, {
        method: 'GET',
        url: `/v1/audit/records?kind=interpretation.recorded&limit=4&cursor=${page1.next_cursor}`,
      })
    ).json()
    const seqs = [...page1.items, ...page2.items].map((r: { seq: number }) => r.seq)
    assert.deepEqual(
      seqs,
      [...seqs].sort((x, y) => x - y),
    )
    assert.equal(new Set(seqs).size, seqs.length)
    assert.equal(seqs.length, 8)
    const byOrchestrator = (
      await app.request(ops, { method: 'GET', url: '/v1/audit/records?orchestrator_id=orch-b' })
    ).json()
    assert.ok(byOrchestrator.items.every((r: { orchestrator_id: string }) => r.orchestrator_id === 'orch-b'))
    assert.equal(byOrchestrator.items.length, 4)
    const verdicts = (
      await app.request(ops, {
        method: 'GET',
        url: '/v1/audit/records?verdict=CRITERIA_DIFFER&kind=manifest.issued',
      })
    ).json()
    assert.equal(verdicts.items.length, 4)
    const future = (
      await app.request(ops, { method: 'GET', url: '/v1/audit/records?from=2999-01-01T00:00:00Z' })
    ).json()
    assert.deepEqual(future, { items: [], next_cursor: null })

    const stream = await app.request(ops, {
      method: 'GET',
      url: '/v1/audit/records?kind=manifest.issued',
      headers: { accept: 'application/x-ndjson' },
    })
    assert.match(String(stream.headers['content-type']), /application\/x-ndjson/)
    const lines = stream.body
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    assert.equal(lines.length, 4)
    assert.ok(lines.every((r) => r.kind === 'manifest.issued'))
    const refused = await app.request(ops, {
      method: 'GET',
      url: '/v1/audit/records?kind=manifest.issued',
      headers: { accept: 'application/x-ndjson;q=0, application/json' },
    })
    assert.equal(refused.json().items.length, 4, 'q=0 means "not NDJSON"')
  })

  it('serves each record from its columns, `data` as stored, in the order of the API record', async (t) => {
    const { app, a, b, ops } = await setup(t)
    const { outcome } = await halted(app, a, b)
    // A label that JSON must escape: quotes, a backslash, a newline, a control character, beyond the BMP.
    const label = 'say "hi" \\ to\nall \u0001 \u{1F600} é'
    const created = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/admin/keys',
      payload: { role: 'ops', label },
    })
    assert.equal(created.statusCode, 201, created.body)
    const subagent = 'agent "q" \\ \t ü'
    await createOutcome(app, a, { subagent_id: subagent })
    const records = (url: string, accept = 'application/json') =>
      app.request(ops, { method: 'GET', url, headers: { accept } })
    const served = (await records('/v1/audit/records?limit=500')).json().items as Record<string, unknown>[]
    // In the order the API documents a record (its schema, and so the OpenAPI document).
    for (const record of served)
      assert.deepEqual(Object.keys(record), Object.keys(registeredCaseSchemas().auditRecord.shape))
    const keyRecord = served.find(
      (r) => r.kind === 'key.created' && (r.data as { label: string }).label === label,
    )
    assert.ok(keyRecord, 'the label comes back as sent')
    assert.ok(served.some((r) => r.kind === 'outcome.created' && r.subagent_id === subagent))
    const ndjson = (await records('/v1/audit/records', 'application/x-ndjson')).body
    assert.deepEqual(
      ndjson
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
      served,
    )
    const story = (await records(`/v1/audit/outcomes/${outcome.outcome_id}`)).json()
    assert.deepEqual(
      story.records,
      served.filter((r) => r.outcome_id === outcome.outcome_id),
    )
    assert.equal(story.records.length, 5)

    // What is served is the columns (what filters match), not the stored text beside them.
    await asSuperuser(app, async (client) => {
      await client.query('ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_delete')
      await client.query('ALTER TABLE audit_records DROP CONSTRAINT audit_records_canonical_record')
      await client.query(`UPDATE audit_records SET verdict = 'AGREED' WHERE seq = 3`)
      await client.query('ALTER TABLE audit_records ENABLE ALWAYS TRIGGER audit_records_no_update_delete')
    })
    assert.deepEqual((await records('/v1/audit/records?verdict=AGREED&kind=key.created')).json().items, [
      { ...served[2], verdict: 'AGREED' },
    ])
  })

  it('refuses UPDATE, DELETE and TRUNCATE, even under session_replication_role = replica', async (t) => {
    const { app } = await setup(t)
    await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/admin/keys',
      payload: { role: 'ops', label: 'x' },
    })
    // Read directly, not through the API: wait for the sequencer as an audit read would.
    await app.app.services.auditLog.catchUp()
    const attempts = [
      'UPDATE audit_records SET actor = $$x$$',
      'DELETE FROM audit_records',
      'TRUNCATE audit_records',
    ]
    await asSuperuser(app, async (client) => {
      for (const replica of [false, true]) {
        for (const sql of attempts) {
          await client.query('BEGIN')
          if (replica) await client.query('SET LOCAL session_replication_role = replica')
          await assert.rejects(client.query(sql), /append-only/, `${sql} (replica=${replica})`)
          await client.query('ROLLBACK')
        }
      }
      const { rows } = await client.query('SELECT count(*)::int AS n FROM audit_records')
      assert.ok(rows[0].n >= 2)
    })
  })

  it('reports the exact first_bad_seq after a superuser edits a row behind its back', async (t) => {
    // What a superuser could do: disable the protection (test only), rewrite history, re-enable it. Each record
    // stores its canonical text beside its columns, and the database holds the two equal; whichever is edited
    // (with the text dropped, or the constraint that holds them equal), verify finds it.
    const dropConstraint = 'ALTER TABLE audit_records DROP CONSTRAINT audit_records_canonical_record;'
    const edits = {
      'data and the stored text dropped': `UPDATE audit_records SET data = '{"forged": true}'::jsonb, canonical = NULL WHERE seq = 4`,
      'a column and the stored text dropped': `UPDATE audit_records SET actor = 'mallory', canonical = NULL WHERE seq = 4`,
      'the stored text, its values unchanged': `UPDATE audit_records SET canonical = replace(canonical, '"seq":4', '"seq":4 ') WHERE seq = 4`,
      'data, after dropping the constraint': `${dropConstraint}
        UPDATE audit_records SET data = '{"forged": true}'::jsonb WHERE seq = 4`,
      'a column, after dropping the constraint': `${dropConstraint}
        UPDATE audit_records SET verdict = 'success' WHERE seq = 4`,
      'the stored text, after dropping the constraint': `${dropConstraint}
        UPDATE audit_records SET canonical = replace(canonical, '"seq":4', '"seq":5') WHERE seq = 4`,
    }
    for (const [edit, sql] of Object.entries(edits)) {
      await t.test(edit, async (t) => {
        const { app, a, b, ops } = await setup(t)
        await halted(app, a, b)
        // Read directly, not through the API: wait for the sequencer as an audit read would.
        await app.app.services.auditLog.catchUp()
        await asSuperuser(app, async (client) => {
          const { rows } = await client.query('SELECT canonical FROM audit_records WHERE seq = 4')
          assert.ok(rows[0].canonical, 'the sequencer stored the text')
          await client.query('ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_delete')
          await client.query(sql)
          await client.query('ALTER TABLE audit_records ENABLE ALWAYS TRIGGER audit_records_no_update_delete')
        })
        const report = (await app.request(ops, { method: 'GET', url: '/v1/audit/verify' })).json()
        assert.equal(report.ok, false)
        assert.equal(report.first_bad_seq, 4)
        assert.equal(report.head_seq, 3)
        const before = (await app.request(ops, { method: 'GET', url: '/v1/audit/verify?to_seq=3' })).json()
        assert.equal(before.ok, true)
        const after = (await app.request(ops, { method: 'GET', url: '/v1/audit/verify?from_seq=5' })).json()
        assert.equal(after.ok, true, 'a range after the edit still links to its own predecessor')
      })
    }
  })

  it('checks again from the columns when the guard of the stored texts changes while it verifies', async (t) => {
    const { app, a, b } = await setup(t)
    await halted(app, a, b)
    await app.app.services.auditLog.catchUp()
    // Right after the records are read on their stored texts: drop the guard, edit a column behind its back.
    let tampered = false
    const db = {
      query: async (...args: unknown[]) => {
        const result = await (app.app.db.query as (...a: unknown[]) => Promise<unknown>)(...args)
        const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text
        if (!tampered && /seq, prev_hash, hash, canonical,/.test(text)) {
          tampered = true
          await asSuperuser(app, async (client) => {
            await client.query('ALTER TABLE audit_records DROP CONSTRAINT audit_records_canonical_record')
            await client.query('ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_delete')
            await client.query(`UPDATE audit_records SET actor = 'mallory' WHERE seq = 4`)
            await client.query(
              'ALTER TABLE audit_records ENABLE ALWAYS TRIGGER audit_records_no_update_delete',
            )
          })
        }
        return result
      },
    }
    const report = await verifyLog(db as unknown as Queryable)
    assert.ok(tampered, 'the records were first read on their stored texts')
    assert.equal(report.ok, false)
    assert.equal(report.first_bad_seq, 4)
  })

  it('refuses any column that disagrees with the stored text, even with the append-only trigger off', async (t) => {
    const { app, a, b } = await setup(t)
    await halted(app, a, b)
    // Record 4 must be in the log before it is edited (the sequencer places records after their change commits).
    await app.app.services.auditLog.catchUp()
    await asSuperuser(app, async (client) => {
      await client.query('ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_delete')
      for (const set of [
        `data = '{"forged": true}'::jsonb`,
        `actor = 'mallory'`,
        `at = at + interval '1 millisecond'`,
        `kind = CASE WHEN kind = 'key.created' THEN 'outcome.created' ELSE 'key.created' END`,
        'outcome_id = gen_random_uuid()',
        `subagent_id = 'sa-forged'`,
        `verdict = 'forged'`,
        `prev_hash = 'sha256:00'`,
        'seq = seq + 1000',
        `canonical = replace(canonical, '"seq":4', '"seq":5')`,
      ]) {
        await assert.rejects(
          client.query(`UPDATE audit_records SET ${set} WHERE seq = 4`),
          /audit_records_canonical_record/,
          set,
        )
      }
      await client.query('ALTER TABLE audit_records ENABLE ALWAYS TRIGGER audit_records_no_update_delete')
      assert.equal((await canonicalTextGuard(client)) !== null, true, 'verify may hash the stored text')
      await client.query('ALTER TABLE audit_records DROP CONSTRAINT audit_records_canonical_record')
      assert.equal((await canonicalTextGuard(client)) !== null, false)
      await client.query(
        `ALTER TABLE audit_records ADD CONSTRAINT audit_records_canonical_record CHECK (canonical IS NULL OR true)`,
      )
      assert.equal(
        (await canonicalTextGuard(client)) !== null,
        false,
        'a constraint of that name that says something else',
      )
    })
  })

  it('signs checkpoints with the manifest key', async (t) => {
    const { app, a, b, ops } = await setup(t)
    await halted(app, a, b)
    const { checkpoint, jws } = (
      await app.request(ops, { method: 'GET', url: '/v1/audit/checkpoint' })
    ).json()
    const head = (await app.request(ops, { method: 'GET', url: '/v1/audit/verify' })).json()
    assert.equal(checkpoint.tree_size, head.tree_size)
    assert.equal(checkpoint.head_seq, head.head_seq)
    assert.equal(checkpoint.head_hash, head.head_hash)
    assert.equal(checkpoint.root_hash, head.root_hash)
    const jwks = (await app.request(null, { method: 'GET', url: '/.well-known/jwks.json' })).json()
    const { payload, protectedHeader } = await compactVerify(jws, createLocalJWKSet(jwks))
    assert.equal(protectedHeader.alg, 'Ed25519')
    assert.deepEqual(JSON.parse(new TextDecoder().decode(payload)), checkpoint)
  })

  it('keeps one unbroken chain when 3 instances append at once', async (t) => {
    const db = await createTestDatabase()
    t.after(() => db.stop())
    const instances = [await setup(t, db), await setup(t, db), await setup(t, db)]
    await Promise.all(
      instances.flatMap(({ app, a, b }) => Array.from({ length: 3 }, () => halted(app, a, b))),
    )
    const { app, ops } = instances[0]!
    const report = (await app.request(ops, { method: 'GET', url: '/v1/audit/verify' })).json()
    assert.equal(report.ok, true)
    const { rows } = await app.app.db.query(
      'SELECT count(*)::int AS n, max(seq)::int AS max FROM audit_records',
    )
    assert.equal(rows[0].n, rows[0].max, 'gapless')
    assert.equal(report.checked, rows[0].n)
    assert.equal(report.head_seq, rows[0].max)
  })
})

describe('escalations and resolutions', () => {
  it('lists HALTs with their receipts and resolves one with a HUMAN_RESOLVED manifest', async (t) => {
    const { app, a, b, ops } = await setup(t)
    const { outcome, manifest } = await halted(app, a, b)
    const open = (await app.request(ops, { method: 'GET', url: '/v1/escalations?status=open' })).json()
    assert.equal(open.items.length, 1)
    const escalation = open.items[0]
    assert.equal(escalation.case, 'outcome')
    assert.equal(escalation.outcome_id, outcome.outcome_id)
    assert.equal(escalation.fanout_id, null)
    assert.equal(escalation.subagent_id, 'refund-agent')
    assert.equal(escalation.run_id, outcome.run_id)
    assert.equal(escalation.manifest_id, manifest.manifest_id)
    assert.equal(escalation.verdict, 'CRITERIA_DIFFER')
    assert.deepEqual(escalation.interpretation_divergence_receipt, manifest.interpretation_divergence_receipt)
    assert.equal(escalation.resolved_at, null)
    const byCase = async (query: string) =>
      (await app.request(ops, { method: 'GET', url: `/v1/escalations?${query}` })).json().items.length
    assert.equal(await byCase('case=outcome&status=open'), 1)
    assert.equal(await byCase('case=fanout'), 0)
    assert.equal(
      (await app.request(ops, { method: 'GET', url: '/v1/escalations?case=review' })).statusCode,
      400,
    )

    const racing = await Promise.all(
      Array.from({ length: 5 }, () =>
        app.request(ops, {
          method: 'POST',
          url: `/v1/outcomes/${outcome.outcome_id}/resolution`,
          payload: { outcome: 'failure', rationale: 'ledger shows the refund reversed' },
        }),
      ),
    )
    assert.deepEqual(racing.map((r) => r.statusCode).sort(), [201, 409, 409, 409, 409])
    const resolved = racing.find((r) => r.statusCode === 201)!.json().manifest
    assert.equal(resolved.verdict, 'HUMAN_RESOLVED')
    assert.equal(resolved.directive, 'PROCEED')
    assert.equal(resolved.resolved_outcome, 'failure')
    assert.equal(resolved.supersedes, manifest.manifest_id)
    assert.equal(resolved.action_owner, 'orch-a', 'the first orchestrator whose reading agrees')
    assert.equal(resolved.resolution.rationale, 'ledger shows the refund reversed')
    assert.match(resolved.resolution.by, /^[0-9a-f-]{36}$/)
    assert.equal((await evaluate(app, a, outcome.outcome_id)).manifest.manifest_id, resolved.manifest_id)
    const done = (await app.request(ops, { method: 'GET', url: '/v1/escalations?status=resolved' })).json()
    assert.equal(done.items[0].status, 'resolved')
    assert.notEqual(done.items[0].resolved_at, null)
    const kinds = (
      await app.request(ops, { method: 'GET', url: `/v1/audit/records?outcome_id=${outcome.outcome_id}` })
    )
      .json()
      .items.map((r: { kind: string }) => r.kind)
    assert.deepEqual(kinds.slice(-2), ['resolution.recorded', 'manifest.issued'])

    const notHalted = await createOutcome(app, a)
    const conflict = await app.request(ops, {
      method: 'POST',
      url: `/v1/outcomes/${notHalted.outcome_id}/resolution`,
      payload: { outcome: 'success', rationale: 'x' },
    })
    assert.equal(conflict.statusCode, 409)
    const empty = await app.request(ops, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/resolution`,
      payload: { outcome: 'success', rationale: '  ' },
    })
    assert.equal(empty.statusCode, 400)
  })

  it('uses the given action owner, one of the outcome’s orchestrators', async (t) => {
    const { app, a, b, ops } = await setup(t)
    const { outcome } = await halted(app, a, b)
    const stranger = await app.request(ops, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/resolution`,
      payload: { outcome: 'success', rationale: 'verified by phone', action_owner: 'orch-ops' },
    })
    assert.equal(stranger.statusCode, 422, stranger.body)
    assert.equal(stranger.json().errors[0].path, 'body/action_owner')
    // The usual rule would pick orch-b, the one that read `success`.
    const response = await app.request(ops, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/resolution`,
      payload: { outcome: 'success', rationale: 'verified by phone', action_owner: 'orch-a' },
    })
    assert.equal(response.statusCode, 201)
    assert.equal(response.json().manifest.action_owner, 'orch-a')
  })
})
