import type pg from 'pg'
import { eachArrayRow, queryArrays } from '../../db/array-rows.ts'
import { boundedPageQuery } from '../../db/bounded-page.ts'
import { isoText } from '../../db/iso-text.ts'
import type { Queryable } from '../../db/pool.ts'
import { type Statement, statement } from '../../db/statement.ts'
import { type CheckedRecord, checkedRecord, storedRecord } from '../core/log-checker.ts'
import type { AuditRecord } from '../core/records.ts'

/**
 * audit_records columns, one per field of an audit record (docs/log-format.md):
 * seq (gapless, given by the sequencer), at, kind, actor (key id or "system"), outcome_id, manifest_id, subagent_id,
 * orchestrator_id, verdict, data (what the change was), prev_hash, hash.
 */
export const AUDIT_COLUMNS =
  'seq, at, kind, actor, outcome_id, manifest_id, subagent_id, orchestrator_id, verdict, data, prev_hash, hash'

export type AuditRow = Omit<AuditRecord, 'at' | 'kind'> & { at: Date; kind: string }

export function auditRowToRecord(row: AuditRow): AuditRecord {
  return { ...row, at: row.at.toISOString(), kind: row.kind as AuditRecord['kind'] }
}

/**
 * audit_head: where the log ends. seq and hash of the last record; tree_size, how many records are leaves of the
 * Merkle tree (equal to seq except while records written before the tree existed are being added).
 */
export interface AuditHeadRow {
  seq: number
  hash: string
  tree_size: number
}

export interface AuditFilter {
  outcomeId?: string | undefined
  subagentId?: string | undefined
  orchestratorId?: string | undefined
  kind?: string | undefined
  verdict?: string | undefined
  from?: Date | undefined
  to?: Date | undefined
  afterSeq: number | null
  /**
   * Members every record must carry in `data` with these values: how a case kind whose id is no column of the
   * record names its records (`{fanout_id: id}`). Each member is indexed by its kind's migration.
   */
  data?: Readonly<Record<string, string>> | undefined
}

/**
 * A record as the API serves it: JSON text, written from its columns with `data` as the database prints it
 * (`data::text`) and `at` formatted by the database, so a page needs no `data` parsed, no `Date` built and nothing
 * serialized again. The columns are what filters match and what is served.
 */
export interface AuditRecordText {
  seq: number
  text: string
}

/** The row `auditRecordTextsQuery` reads: the record's columns, `at` as RFC 3339 text and `data` as JSON text. */
export type AuditTextRow = Omit<AuditRecord, 'data'> & { data: string }

const json = JSON.stringify
const jsonOrNull = (value: string | null) => (value === null ? 'null' : JSON.stringify(value))

/** The record as JSON, its fields in the order of the API's record. */
export function auditRecordText(row: AuditTextRow): AuditRecordText {
  return {
    seq: row.seq,
    text:
      `{"seq":${row.seq},"at":${json(row.at)},"kind":${json(row.kind)},"actor":${json(row.actor)},` +
      `"outcome_id":${jsonOrNull(row.outcome_id)},"manifest_id":${jsonOrNull(row.manifest_id)},` +
      `"subagent_id":${jsonOrNull(row.subagent_id)},"orchestrator_id":${jsonOrNull(row.orchestrator_id)},` +
      `"verdict":${jsonOrNull(row.verdict)},"data":${row.data},"prev_hash":${json(row.prev_hash)},` +
      `"hash":${json(row.hash)}}`,
  }
}

/**
 * Matching records, ascending seq, keyset-paged: pages stay stable while appends continue (new records only ever
 * come after). Its rows go through `auditRecordText`; read your writes by `seq` (VerifiableLog.readYourWrites).
 */
export function auditRecordTextsQuery(filter: AuditFilter, limit: number): Statement<AuditTextRow> {
  const { members, values } = listParameters(filter, limit)
  return statement(statementFor(listStatements, members, auditRecordList), values)
}

/**
 * The statement of a page of `GET /v1/audit/records` (rows as `auditRecordTextsQuery` reads them, each with
 * `page_rows`), bounded in bytes (src/db/bounded-page.ts), for a read-your-writes read by `seq`.
 */
export function auditRecordPageQuery(filter: AuditFilter, limit: number): Statement<AuditTextRow> {
  const { members, values } = listParameters(filter, limit)
  return statement(statementFor(pageStatements, members, auditRecordPage), values)
}

/** The filters of both lists; `$9` is the limit, the `data` members follow from `$10` in their order. */
function auditWhere(alias: string, members: readonly string[]): string {
  const column = (name: string) => `${alias}${name}`
  return [
    `($1::uuid IS NULL OR ${column('outcome_id')} = $1) AND ($2::text IS NULL OR ${column('subagent_id')} = $2)`,
    `AND ($3::text IS NULL OR ${column('orchestrator_id')} = $3) AND ($4::text IS NULL OR ${column('kind')} = $4)`,
    `AND ($5::text IS NULL OR ${column('verdict')} = $5) AND ($6::timestamptz IS NULL OR ${column('at')} >= $6)`,
    `AND ($7::timestamptz IS NULL OR ${column('at')} <= $7) AND ($8::bigint IS NULL OR ${column('seq')} > $8)`,
    // The member is written into the text, not passed as a parameter: its kind's index is on that expression.
    ...members.map((member, i) => `AND ${column('data')}->>'${member}' = $${10 + i}`),
  ].join('\n       ')
}

function auditRecordPage(members: readonly string[]): string {
  return boundedPageQuery({
    table: 'audit_records',
    alias: 'a',
    key: 'seq',
    columns: `a.seq, ${isoText('a.at')} AS at, a.kind, a.actor, a.outcome_id, a.manifest_id, a.subagent_id,
       a.orchestrator_id, a.verdict, a.data::text AS data, a.prev_hash, a.hash`,
    where: auditWhere('a.', members),
    order: ['seq'],
    itemBytes: '600 + octet_length(a.data::text)',
    limit: '$9',
  })
}

function auditRecordList(members: readonly string[]): string {
  return `SELECT seq, ${isoText('at')} AS at, kind, actor, outcome_id, manifest_id, subagent_id,
       orchestrator_id, verdict, data::text AS data, prev_hash, hash
     FROM audit_records
     WHERE ${auditWhere('', members)}
     ORDER BY seq LIMIT $9`
}

/** Each statement once per set of `data` members (the kinds' few filters). */
const pageStatements = new Map<string, string>()
const listStatements = new Map<string, string>()

function statementFor(
  cache: Map<string, string>,
  members: readonly string[],
  build: (members: readonly string[]) => string,
): string {
  const key = members.join(',')
  let text = cache.get(key)
  if (text === undefined) {
    text = build(members)
    cache.set(key, text)
  }
  return text
}

/** A `data` member a filter may name: a kind's id field, never a caller's text. */
const DATA_MEMBER = /^[a-z][a-z0-9_]*$/

function listParameters(filter: AuditFilter, limit: number) {
  const data = Object.entries(filter.data ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  for (const [member] of data) if (!DATA_MEMBER.test(member)) throw new Error(`not a data member: ${member}`)
  return {
    members: data.map(([member]) => member),
    values: [
      filter.outcomeId ?? null,
      filter.subagentId ?? null,
      filter.orchestratorId ?? null,
      filter.kind ?? null,
      filter.verdict ?? null,
      filter.from ?? null,
      filter.to ?? null,
      filter.afterSeq,
      limit,
      ...data.map(([, value]) => value),
    ] as unknown[],
  }
}

/** Records with from <= seq <= to, ascending, at most `limit`. */
export function auditRange(fromSeq: number, toSeq: number, limit: number): Statement<AuditRow> {
  return statement(
    `SELECT ${AUDIT_COLUMNS} FROM audit_records WHERE seq >= $1 AND seq <= $2 ORDER BY seq LIMIT $3`,
    [fromSeq, toSeq, limit],
  )
}

/** The one row of audit_head. */
export function auditHead(): Statement<AuditHeadRow> {
  return statement('SELECT seq, hash, tree_size FROM audit_head')
}

/** A record's other columns as `recordsForCheck` reads them in one JSON array, in this order. */
type ColumnsArray = [
  at: string,
  kind: AuditRecord['kind'],
  actor: string,
  outcome_id: string | null,
  manifest_id: string | null,
  subagent_id: string | null,
  orchestrator_id: string | null,
  verdict: string | null,
  data: AuditRecord['data'],
]

/** `at` as the API writes it (millisecond RFC 3339 UTC), formatted by the database: a million rows, no Date. */
const AT_TEXT = isoText('at')

/** A row of `recordsForCheck` with stored texts: seq, prev_hash, hash, the text, or the columns when it has none. */
type StoredTextRow = [number, string, string, string | null, string | null]

/** A row of `recordsForCheck` rebuilding every text: seq, the record's other columns, and the stored text. */
type ColumnsRow = [
  number,
  string,
  string,
  string,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  string,
  string,
  string,
  string | null,
]

/** A record rebuilt from its columns (`data` parsed again), to be hashed as the text they make. */
function recordFromColumns(seq: number, prev_hash: string, hash: string, columns: ColumnsArray): AuditRecord {
  const [at, kind, actor, outcome_id, manifest_id, subagent_id, orchestrator_id, verdict, data] = columns
  return {
    seq,
    at,
    kind,
    actor,
    outcome_id,
    manifest_id,
    subagent_id,
    orchestrator_id,
    verdict,
    data,
    prev_hash,
    hash,
  }
}

/**
 * How records with from <= seq <= to are read for bulk checking, ascending, as rows of arrays: the statement,
 * and what makes each row a checked record. With `storedText` (pass it only when `canonicalTextGuard` finds the
 * guard), a record that has its canonical text stored is read as that text, its seq and its hashes: the
 * database holds its other columns equal to the text. The others (written before texts were stored), and every
 * record without `storedText`, have their text rebuilt from their columns; a stored text must then be exactly
 * the rebuilt one.
 */
function recordsForCheck(storedText: boolean): { text: string; toRecord: (row: unknown[]) => CheckedRecord } {
  if (storedText) {
    return {
      text: `SELECT seq, prev_hash, hash, canonical,
                    CASE WHEN canonical IS NULL THEN json_build_array(${AT_TEXT}, kind, actor, outcome_id,
                      manifest_id, subagent_id, orchestrator_id, verdict, data)::text END
             FROM audit_records WHERE seq >= $1 AND seq <= $2 ORDER BY seq`,
      toRecord: (row) => {
        const [seq, prev_hash, hash, canonical, columns] = row as StoredTextRow
        if (canonical !== null) return storedRecord(seq, prev_hash, hash, canonical)
        return checkedRecord(recordFromColumns(seq, prev_hash, hash, JSON.parse(columns!) as ColumnsArray))
      },
    }
  }
  return {
    text: `SELECT seq, ${AT_TEXT}, kind, actor, outcome_id, manifest_id, subagent_id, orchestrator_id, verdict,
                  data::text, prev_hash, hash, canonical
           FROM audit_records WHERE seq >= $1 AND seq <= $2 ORDER BY seq`,
    toRecord: (row) => {
      const r = row as ColumnsRow
      const columns = [r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], JSON.parse(r[9])] as ColumnsArray
      return checkedRecord(recordFromColumns(r[0], r[10], r[11], columns), r[12])
    },
  }
}

/** Records with from <= seq <= to, ascending, read for bulk checking (see `recordsForCheck`). */
export async function auditRecordsForCheck(
  db: Queryable,
  fromSeq: number,
  toSeq: number,
  storedText: boolean,
): Promise<CheckedRecord[]> {
  const { text, toRecord } = recordsForCheck(storedText)
  return (await queryArrays(db, text, [fromSeq, toSeq])).map(toRecord)
}

/**
 * The same records handed to `onRecord` one at a time as they arrive, none of them kept: what checking a large
 * log does, so that the records' texts (about a kilobyte each) die young instead of being copied by every
 * garbage collection while a whole chunk of them waits.
 */
export function eachAuditRecordForCheck(
  client: pg.ClientBase,
  fromSeq: number,
  toSeq: number,
  storedText: boolean,
  onRecord: (record: CheckedRecord) => void,
): Promise<void> {
  const { text, toRecord } = recordsForCheck(storedText)
  return eachArrayRow(client, text, [fromSeq, toSeq], (row) => onRecord(toRecord(row)))
}

/** The constraint that holds each record's columns equal to its stored canonical text (migration 008). */
const CANONICAL_RECORD_CONSTRAINT = 'audit_records_canonical_record'

/**
 * The constraint that holds each record's columns equal to its stored canonical text, while it is there and
 * validated: its oid and its check as PostgreSQL prints it (see `canonicalTextGuardOf`).
 */
export function canonicalRecordConstraint(): Statement<{ oid: number; def: string }> {
  return statement(
    `SELECT oid::int8 AS oid, pg_get_constraintdef(oid) AS def FROM pg_constraint
     WHERE conrelid = 'audit_records'::regclass AND conname = $1 AND contype = 'c' AND convalidated`,
    [CANONICAL_RECORD_CONSTRAINT],
  )
}

/**
 * Whether the database still holds every record's columns equal to its stored canonical text, from the rows of
 * `canonicalRecordConstraint`: the constraint's oid while it is there, validated, and says what it said when
 * created; null otherwise (someone who can drop it can also write columns that disagree with the text, so
 * verification then rebuilds every record's text from its columns). A verification that relied on it reads it
 * again at the end: a different answer (dropped, even if added again) means its rows may not be.
 */
export function canonicalTextGuardOf(rows: readonly { oid: number; def: string }[]): number | null {
  const row = rows[0]
  return rows.length === 1 && row!.def.replace(/\s+/g, ' ') === CANONICAL_RECORD_CHECK
    ? Number(row!.oid)
    : null
}

/** How PostgreSQL prints the constraint's check (15, and 17 in PGlite, alike; another printing only costs speed). */
const CANONICAL_RECORD_CHECK =
  "CHECK (((canonical IS NULL) OR ((canonical)::jsonb = jsonb_build_object('actor', actor, 'at', " +
  `to_char((at AT TIME ZONE 'UTC'::text), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'::text), 'data', data, 'kind', kind, ` +
  "'manifest_id', manifest_id, 'orchestrator_id', orchestrator_id, 'outcome_id', outcome_id, 'prev_hash', " +
  "prev_hash, 'seq', seq, 'subagent_id', subagent_id, 'verdict', verdict))))"
