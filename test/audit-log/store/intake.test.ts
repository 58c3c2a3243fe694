import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type pg from 'pg'
import { appendAuditRecords } from '../../../src/audit-log/append.ts'
import type { IntakeRow } from '../../../src/audit-log/store/intake.ts'
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
})
