import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createPool, type Pool } from '../../src/db/pool.ts'
import { FALLBACK_POLICIES, OUTCOME_READINGS, OUTCOME_STATUSES } from '../../src/domain/outcome/vocabulary.ts'
import { ESCALATION_STATUSES, ROLES } from '../../src/domain/vocabulary.ts'
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts'

/**
 * The database refuses values outside the vocabulary with CHECK constraints; the vocabulary itself is defined
 * once, in src/domain/. These constraints must list exactly the domain's tuples, or one of the two has drifted.
 */
const CHECKED: { table: string; column: string; values: readonly string[] }[] = [
  { table: 'api_keys', column: 'role', values: ROLES },
  { table: 'outcomes', column: 'fallback_policy', values: FALLBACK_POLICIES },
  { table: 'subagent_policies', column: 'fallback_policy', values: FALLBACK_POLICIES },
  { table: 'outcomes', column: 'status', values: OUTCOME_STATUSES },
  { table: 'interpretations', column: 'outcome_interpretation', values: OUTCOME_READINGS },
  { table: 'escalations', column: 'status', values: ESCALATION_STATUSES },
]

let db: TestDatabase
let pool: Pool
before(async () => {
  db = await createTestDatabase()
  pool = createPool({ connectionString: db.connectionString, max: 1 })
})
after(async () => {
  await pool.end()
  await db.stop()
})

describe('CHECK constraints of the migrated schema', () => {
  for (const { table, column, values } of CHECKED) {
    it(`${table}.${column} allows exactly the domain's ${values.length} values`, async () => {
      const { rows } = await pool.query<{ definition: string }>(
        `SELECT pg_get_constraintdef(c.oid) AS definition
         FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
         WHERE c.contype = 'c' AND c.conrelid = $1::regclass AND a.attname = $2`,
        [table, column],
      )
      assert.equal(rows.length, 1, `one CHECK on ${table}.${column}`)
      const allowed = [...rows[0]!.definition.matchAll(/'([^']*)'::text/g)].map((match) => match[1])
      assert.deepEqual(allowed, [...values])
    })
  }

  it('leaves directives unchecked: each case kind has its own', async () => {
    const { rows } = await pool.query(
      `SELECT 1 FROM pg_constraint WHERE contype = 'c' AND conrelid = 'manifests'::regclass`,
    )
    assert.equal(rows.length, 0)
  })
})
