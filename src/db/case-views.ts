import type { QueryResultRow } from 'pg'
import { type BoundedPageSpec, boundedPageQuery } from './bounded-page.ts'
import { isoText } from './iso-text.ts'
import { named, type Statement, statement } from './statement.ts'

/** How a case kind's table is shown: its table, its alias, the select list and an item's size estimate. */
export interface CaseViewSpec extends Pick<BoundedPageSpec, 'table' | 'alias' | 'columns' | 'itemBytes'> {
  /** The column its list is filtered by besides the status (the sub-agent's or the orchestrator's id). */
  owner: string
}

/** What a case kind's list is filtered by, and where its page starts (after a `list_seq`, or from the first). */
export interface CaseListFilter {
  owner: string | undefined
  status: string | undefined
  afterSeq: number | null
}

/** The statements that read a case kind's cases as shown, each `Row` read in one round trip. */
export interface CaseViews<Row extends QueryResultRow> {
  /** One case, by id. */
  one(id: string): Statement<Row>
  /**
   * A page of the list: the cases of one owner and one status, each when given, in creation order, at most
   * `limit` of them and bounded in bytes (src/db/bounded-page.ts).
   */
  page(filter: CaseListFilter, limit: number): Statement<Row>
}

/** The views of the case kind `spec` describes; its texts are built once (`spec` holds constants, never data). */
export function caseViews<Row extends QueryResultRow>(spec: CaseViewSpec): CaseViews<Row> {
  const a = spec.alias
  const one = `SELECT ${spec.columns} FROM ${spec.table} ${a} WHERE ${a}.id = $1`
  const page = boundedPageQuery({
    table: spec.table,
    alias: a,
    columns: spec.columns,
    where: `($1::text IS NULL OR ${a}.${spec.owner} = $1) AND ($2::text IS NULL OR ${a}.status = $2)
       AND ($3::bigint IS NULL OR ${a}.list_seq > $3)`,
    order: ['list_seq'],
    itemBytes: spec.itemBytes,
    limit: '$4',
  })
  return {
    one: (id) => named(one, [id]),
    page: (filter, limit) =>
      statement(page, [filter.owner ?? null, filter.status ?? null, filter.afterSeq, limit]),
  }
}

/** The rows of a case in one of its tables that a view shows the latest of each of (see latestOfEach). */
export interface LatestOfEachSpec {
  /** The table, and its column holding the case's id. */
  table: string
  parent: string
  /** The case's id in the statement around it (e.g. `f.id`). */
  caseId: string
  /** Only these rows (an expression on the table's row `l`, e.g. `l.revision = r.revision`). */
  where?: string
  /** The rows come in runs of one `key` each, and the one with the highest `latest` is shown. */
  key: string
  latest: string
  /** The columns shown, as they are; then `times`, in the API's form (src/db/iso-text.ts). */
  columns: readonly string[]
  times?: readonly string[]
}

/**
 * A column of a case's view, read in the same statement: the latest of each run of the case's rows in a table
 * (each orchestrator's latest interpretation, each subtask's latest result, …) as a JSON array of objects, in no
 * particular order (`[]` when there is none).
 */
export function latestOfEach(spec: LatestOfEachSpec): string {
  const members = [
    ...spec.columns.map((column) => `'${column}', c.${column}`),
    ...(spec.times ?? []).map((column) => `'${column}', ${isoText(`c.${column}`)}`),
  ]
  const where = spec.where === undefined ? '' : ` AND ${spec.where}`
  return `(SELECT coalesce(json_agg(json_build_object(${members.join(', ')})), '[]')
   FROM (SELECT DISTINCT ON (l.${spec.key}) l.* FROM ${spec.table} l WHERE l.${spec.parent} = ${spec.caseId}${where}
         ORDER BY l.${spec.key}, l.${spec.latest} DESC) c)`
}
