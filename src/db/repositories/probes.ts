import type { ProbeDefinition } from '../../probes/probe-definition.ts'
import { boundedPageQuery } from '../bounded-page.ts'
import { combineWrites, type Statement, statement } from '../statement.ts'

/**
 * probes: the current version of each registered probe (id, name, version, definition, probe_digest,
 * created_at, updated_at); probe_versions keeps every version, so a manifest's probe_version stays explainable.
 */
export interface ProbeRow {
  id: string
  name: string
  version: number
  definition: ProbeDefinition
  probe_digest: string
  created_at: Date
  updated_at: Date
}

const COLUMNS = 'id, name, version, definition, probe_digest, created_at, updated_at'

/** A new probe, and its first version. */
export function probeInsert(row: ProbeRow): Statement {
  return combineWrites([
    statement(`INSERT INTO probes (${COLUMNS}) VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7)`, [
      row.id,
      row.name,
      row.version,
      JSON.stringify(row.definition),
      row.probe_digest,
      row.created_at,
      row.updated_at,
    ]),
    probeVersionInsert(row),
  ])
}

function probeVersionInsert(row: ProbeRow): Statement {
  return statement(
    `INSERT INTO probe_versions (probe_id, version, definition, probe_digest, created_at)
     VALUES ($1, $2, $3::jsonb, $4, $5)`,
    [row.id, row.version, JSON.stringify(row.definition), row.probe_digest, row.updated_at],
  )
}

/** The probe (no row when unknown); with `lock`, locked until the transaction ends. */
export function probeById(id: string, options: { lock?: boolean } = {}): Statement<ProbeRow> {
  return statement(`SELECT ${COLUMNS} FROM probes WHERE id = $1${options.lock ? ' FOR UPDATE' : ''}`, [id])
}

/** Replaces the definition: version + 1, the old version kept in probe_versions. */
export function probeUpdate(row: ProbeRow): Statement {
  return combineWrites([
    statement(
      'UPDATE probes SET name = $2, version = $3, definition = $4::jsonb, probe_digest = $5, updated_at = $6 WHERE id = $1',
      [row.id, row.name, row.version, JSON.stringify(row.definition), row.probe_digest, row.updated_at],
    ),
    probeVersionInsert(row),
  ])
}

/** A page of probes, bounded in bytes (src/db/bounded-page.ts): a probe's size is its row as JSON. */
const PROBE_PAGE = boundedPageQuery({
  table: 'probes',
  alias: 'p',
  columns: COLUMNS.split(', ')
    .map((column) => `p.${column}`)
    .join(', '),
  where: '($1::timestamptz IS NULL OR (p.created_at, p.id) > ($1::timestamptz, $2::uuid))',
  order: ['created_at', 'id'],
  itemBytes: 'octet_length(row_to_json(p)::text)',
  limit: '$3',
})

export function probesPage(after: { at: Date; id: string } | null, limit: number): Statement<ProbeRow> {
  return statement(PROBE_PAGE, [after?.at ?? null, after?.id ?? null, limit])
}
