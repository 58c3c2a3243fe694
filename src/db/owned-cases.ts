import type { QueryResultRow } from 'pg'
import { caseViews } from './case-views.ts'
import { named, type Statement, statement } from './statement.ts'

/*
 * Reads of the case kinds an orchestrator owns (fan-outs, reviews): each case row has its `orchestrator_id`, a key
 * of the orchestrator's choosing (together its natural key), a `status` and a `list_seq` (its place in lists).
 */

/** An owned kind's table, and how it shows a case. */
export interface OwnedCaseTable {
  name: string
  /** The select list of its rows. */
  columns: string
  /** The column of the orchestrator's key. */
  keyColumn: string
  /** Whether its reads by id are prepared once per connection (./statement.ts, `named`). */
  prepared: boolean
  /** The table's alias in `viewColumns` and `itemBytes`. */
  alias: string
  /** The select list of a case as shown: its row and what it shows of its inputs, in one statement. */
  viewColumns: string
  /** An estimate of one case's size as shown, in bytes, for the pages' byte bound (./case-views.ts). */
  itemBytes: string
}

/** Which owned cases a page holds: of one orchestrator and status if given, after `afterSeq`. */
export interface OwnedCaseFilter<Status> {
  orchestratorId?: string | undefined
  status?: Status | undefined
  afterSeq: number | null
}

/**
 * The reads of an owned kind: its row by natural key (the orchestrator's id and its key) or by id — with `lock`,
 * locked until the transaction ends, which serializes everything that changes the case — and the case as shown,
 * one or a page of them (oldest first, of one orchestrator and status if asked), each in one round trip.
 */
export function ownedCaseReads<
  Row extends QueryResultRow,
  ViewRow extends QueryResultRow,
  Status extends string,
>(table: OwnedCaseTable) {
  const select = `SELECT ${table.columns} FROM ${table.name}`
  const byIdStatement = table.prepared ? named<Row> : statement<Row>
  const views = caseViews<ViewRow>({
    table: table.name,
    alias: table.alias,
    columns: table.viewColumns,
    itemBytes: table.itemBytes,
    owner: 'orchestrator_id',
  })
  return {
    byKey: (orchestratorId: string, key: string): Statement<Row> =>
      statement(`${select} WHERE orchestrator_id = $1 AND ${table.keyColumn} = $2`, [orchestratorId, key]),
    byId: (id: string, options: { lock?: boolean } = {}): Statement<Row> =>
      byIdStatement(`${select} WHERE id = $1${options.lock ? ' FOR UPDATE' : ''}`, [id]),
    view: views.one,
    viewsPage: ({ orchestratorId, status, afterSeq }: OwnedCaseFilter<Status>, limit: number) =>
      views.page({ owner: orchestratorId, status, afterSeq }, limit),
  }
}
