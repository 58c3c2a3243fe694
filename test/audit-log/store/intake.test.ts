import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type pg from 'pg'
import { appendAuditRecords } from '../../../src/audit-log/append.ts'
import { type IntakeRow, intakeInsertFrom } from '../../../src/audit-log/store/intake.ts'
import { createPool } from '../../../src/db/pool.ts'
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts'

describe('audit intake', () => {
  let database: TestDatabase
  let pool: pg.Pool
  before(async () => {
    database = await createTestDatabase()
    pool = createPool({ connectionString: database.connectionString, max: 2 })
  })
  after(async () => {
    await pool.end()
    await database.stop()
  })

  it('stores the entries of one append in their order, every field as given', async () => {
    const outcomeId = '0b6b8c8e-4a53-4c1e-9a51-5c1f3b1e2d40'
    const entries = Array.from({ length: 40 }, (_, i) => ({
      kind: i % 2 === 0 ? ('interpretation.recorded' as const) : ('outcome.created' as const),
      actor: `key-${i}`,
      outcome_id: i % 3 === 0 ? outcomeId : null,
      orchestrator_id: i % 5 === 0 ? null : `orch-${i}`,
      verdict: i === 7 ? 'ARBITER_DECIDES' : null,
      at: new Date(Date.UTC(2026, 11, 5, 12, 0, 0, i)).toISOString(),
      data: { i, text: `quote " backslash \\ é ${'x'.repeat(i)}`, nested: { list: [i, null, true] } },
    }))
    await appendAuditRecords(pool, entries)
    const { rows } = await pool.query<Omit<IntakeRow, 'id'>>(
      `SELECT kind, actor, outcome_id, manifest_id, subagent_id, orchestrator_id, verdict, at, data
       FROM audit_intake ORDER BY id`,
    )
    assert.equal(rows.length, entries.length)
    for (const [i, row] of rows.entries()) {
      const entry = entries[i]!
      assert.deepEqual(
        { ...row, at: row.at.toISOString() },
        {
          kind: entry.kind,
          actor: entry.actor,
          outcome_id: entry.outcome_id,
          manifest_id: null,
          subagent_id: null,
          orchestrator_id: entry.orchestrator_id,
          verdict: entry.verdict,
          at: entry.at,
          data: entry.data,
        },
        `entry ${i}`,
      )
    }
  })

  it("writes one entry per row of a statement's own rows, each field as its expression, ids left out null", async () => {
    const manifestId = '3f0c9a52-8d1e-4b7a-9c2f-6e5d4a3b2c10'
    const { rows: answered } = await pool.query<{ name: string }>(
      `WITH made AS (SELECT * FROM (VALUES ('from-a', 1), ('from-b', 2)) AS v(name, n)),
       audit AS (
         ${intakeInsertFrom('made', {
           at: '$1',
           kind: '$2',
           actor: 'made.name',
           manifest_id: '$3',
           orchestrator_id: "'orch-' || made.n",
           data: `$4::jsonb || jsonb_build_object('n', made.n)`,
         })}
       )
       SELECT name FROM made ORDER BY n`,
      ['2026-12-05T12:00:00.000Z', 'manifest.issued', manifestId, JSON.stringify({ given: true })],
    )
    assert.deepEqual(
      answered.map((row) => row.name),
      ['from-a', 'from-b'],
    )
    const { rows } = await pool.query<Omit<IntakeRow, 'id'>>(
      `SELECT kind, actor, outcome_id, manifest_id, subagent_id, orchestrator_id, verdict, at, data
       FROM audit_intake WHERE actor LIKE 'from-%' ORDER BY actor`,
    )
    assert.deepEqual(
      rows.map((row) => ({ ...row, at: row.at.toISOString() })),
      [1, 2].map((n) => ({
        kind: 'manifest.issued',
        actor: n === 1 ? 'from-a' : 'from-b',
        outcome_id: null,
        manifest_id: manifestId,
        subagent_id: null,
        orchestrator_id: `orch-${n}`,
        verdict: null,
        at: '2026-12-05T12:00:00.000Z',
        data: { given: true, n },
      })),
    )
  })
})
