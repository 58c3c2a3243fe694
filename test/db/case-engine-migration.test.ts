import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import { signCanonical, verifyEnvelope } from '../../src/crypto/jws.ts'
import { migrate, readMigrations } from '../../src/db/migrate.ts'
import { createPool } from '../../src/db/pool.ts'
import { signingKeyInsert } from '../../src/db/repositories/signing-keys.ts'
import { runStatement } from '../../src/db/statement.ts'
import { canonicalJson, sha256 } from '../../src/domain/shared/canonical-json.ts'
import { buildTestApp, newSigningKey } from '../helpers/app.ts'
import { createTestDatabase } from '../helpers/database.ts'

/**
 * Migration 002 (one engine, several case kinds) on a database that already holds outcome data in the 001
 * shape: a HALTed outcome whose signed manifest names its own `audit_seq` and has no `kind`, its escalation and a
 * probe run. Afterwards everything belongs to an outcome case, the old manifest is served exactly as signed and
 * still verifies, and the HALT can be resolved.
 */
describe('migration 002_case_engine', () => {
  it('moves existing manifests, escalations and probe runs to outcome cases without touching what was signed', async (t) => {
    const db = await createTestDatabase({ migrate: false })
    t.after(() => db.stop())
    const pool = createPool({ connectionString: db.connectionString, max: 1 })
    t.after(() => pool.end())
    const migrations = await readMigrations()
    await migrate(pool, migrations.slice(0, 1))

    const key = await newSigningKey()
    await runStatement(pool, signingKeyInsert(key))
    const outcomeId = randomUUID()
    const manifestId = randomUUID()
    const oldManifest = {
      manifest_id: manifestId,
      outcome_id: outcomeId,
      subagent_id: 'refund-agent',
      run_id: 'run-1',
      issued_at: '2026-01-01T00:00:00.000Z',
      verdict: 'CRITERIA_DIFFER',
      directive: 'HALT',
      resolved_outcome: null,
      subagent_outcome_evidence_hash: `sha256:${'1'.repeat(64)}`,
      interpretations: [
        {
          orchestrator_id: 'orch-a',
          success_criterion_signature: `sha256:${'2'.repeat(64)}`,
          outcome_interpretation: 'failure',
          evidence_hash: `sha256:${'1'.repeat(64)}`,
          intended_action: null,
          revision: 1,
          received_at: '2026-01-01T00:00:00.000Z',
        },
      ],
      interpretation_divergence_receipt: null,
      ground_truth_arbiter_predicate: null,
      action_owner: null,
      missing_orchestrators: [],
      supersedes: null,
      audit_seq: 7,
      resolution: null,
    }
    const jcs = canonicalJson(oldManifest)
    await pool.query(
      `INSERT INTO outcomes (id, subagent_id, run_id, request_digest, expected_orchestrators, fallback_policy,
         status, evidence_hash, manifest_id, created_at)
       VALUES ($1, 'refund-agent', 'run-1', 'sha256:x', '{}', 'escalate', 'halted', $2, $3, now())`,
      [outcomeId, oldManifest.subagent_outcome_evidence_hash, manifestId],
    )
    await pool.query(
      `INSERT INTO manifests (id, outcome_id, subagent_id, verdict, directive, final, inputs_digest, issued_at,
         audit_seq, manifest_jcs, manifest_digest, jws)
       VALUES ($1, $2, 'refund-agent', 'CRITERIA_DIFFER', 'HALT', true, 'sha256:inputs', $3, 7, $4, $5, $6)`,
      [manifestId, outcomeId, oldManifest.issued_at, jcs, sha256(jcs), await signCanonical(oldManifest, key)],
    )
    await pool.query(
      `INSERT INTO escalations (outcome_id, manifest_id, status, opened_at) VALUES ($1, $2, 'open', now())`,
      [outcomeId, manifestId],
    )
    await pool.query(
      `INSERT INTO probe_runs (outcome_id, inputs_digest, claimed_until) VALUES ($1, 'sha256:inputs', now())`,
      [outcomeId],
    )

    assert.deepEqual(await migrate(pool, migrations), ['002_case_engine', ...migrations.slice(2).map(name)])
    const one = async (sql: string) => (await pool.query(sql)).rows[0]
    assert.deepEqual(await one('SELECT kind, case_kind, case_id, case_round, audit_seq FROM manifests'), {
      kind: 'outcome',
      case_kind: 'outcome',
      case_id: outcomeId,
      case_round: 0,
      audit_seq: 7,
    })
    assert.deepEqual(await one('SELECT case_kind, case_id, manifest_id FROM escalations'), {
      case_kind: 'outcome',
      case_id: outcomeId,
      manifest_id: manifestId,
    })
    assert.deepEqual(await one('SELECT case_kind, case_id FROM probe_runs'), {
      case_kind: 'outcome',
      case_id: outcomeId,
    })

    const app = await buildTestApp(t, { database: db, signingKey: key })
    const ops = await app.key('ops')
    const served = await app.request(ops, { method: 'GET', url: `/v1/manifests/${manifestId}` })
    assert.equal(served.statusCode, 200)
    const envelope = served.json()
    assert.equal(served.body.slice(0, `{"manifest":${jcs}`.length), `{"manifest":${jcs}`, 'served as signed')
    assert.equal(envelope.audit_seq, 7)
    assert.deepEqual(await verifyEnvelope(envelope, await jwks(app)), {
      ok: true,
      kid: key.kid,
    })
    const escalations = (
      await app.request(ops, { method: 'GET', url: '/v1/escalations?case=outcome' })
    ).json()
    assert.equal(escalations.items[0].case, 'outcome')
    assert.equal(escalations.items[0].outcome_id, outcomeId)

    const resolved = await app.request(ops, {
      method: 'POST',
      url: `/v1/outcomes/${outcomeId}/resolution`,
      payload: { outcome: 'failure', rationale: 'checked the ledger' },
    })
    assert.equal(resolved.statusCode, 201, resolved.body)
    const resolution = resolved.json().manifest
    assert.equal(resolution.kind, 'outcome')
    assert.equal(resolution.supersedes, manifestId)
    assert.equal(resolution.action_owner, 'orch-a')
    assert.equal('audit_seq' in resolution, false, 'the new manifest does not sign its log position')
  })
})

function name(migration: { version: number; name: string }) {
  return `${String(migration.version).padStart(3, '0')}_${migration.name}`
}

async function jwks(app: Awaited<ReturnType<typeof buildTestApp>>) {
  return (await app.request(null, { method: 'GET', url: '/.well-known/jwks.json' })).json()
}
