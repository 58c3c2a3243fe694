import type { QueryResult, QueryResultRow } from 'pg'
import { shiftPlaceholders } from './placeholders.ts'
import { preparesStatements, type Queryable } from './pool.ts'

export { shiftPlaceholders } from './placeholders.ts'

/** The type of a statement's rows, carried by its type only (a statement holds no rows). */
declare const ROW: unique symbol

/**
 * A parameterised SQL statement, built apart from running it: a repository function returns one, and the caller
 * runs it with `queryRows`, `queryFirst` or `runStatement` on the pool or inside a transaction, or sends several
 * as one (`combineWrites`, `guardedWrites`).
 */
export interface Statement<Row extends QueryResultRow = QueryResultRow> {
  text: string
  values: unknown[]
  /**
   * Prepare it once per connection (see `named`). Only for a text that is one of a few, never built from data:
   * each connection keeps every statement it prepared.
   */
  prepare?: boolean
  /**
   * The name a prepared statement is prepared under (set by `named`; the executor names the others it prepares).
   * pg prepares any query config with a name, so a statement handed to `db.query` directly is prepared even on a
   * pool that prepares nothing; the executor leaves the name off there.
   */
  name?: string
  readonly [ROW]?: Row
}

/** `text` with its `values`, whose rows are `Row`s. */
export function statement<Row extends QueryResultRow = QueryResultRow>(
  text: string,
  values: unknown[] = [],
): Statement<Row> {
  return { text, values }
}

/**
 * `text` as a statement prepared once per connection: parsed and planned once, then only bound and run, which
 * saves the database most of its work on the statements every request sends. Only for a text that is one of a
 * few, never built from data: each connection keeps every statement it prepared. A pool made without
 * `namedStatements` runs it unprepared (PoolOptions.namedStatements).
 */
export function named<Row extends QueryResultRow = QueryResultRow>(
  text: string,
  values: unknown[],
): Statement<Row> {
  return { text, values, prepare: true, name: nameOf(text) }
}

const names = new Map<string, string>()

/** The name `text` is prepared under: the same text gets the same name everywhere. */
function nameOf(text: string): string {
  let name = names.get(text)
  if (name === undefined) {
    name = `arbiter_${names.size + 1}`
    names.set(text, name)
  }
  return name
}

/**
 * Runs `statement` on `db`: the one place a statement meets the database. It is prepared (sent with a name) only
 * when it asks to be and `db` prepares statements.
 */
export function execute<Row extends QueryResultRow>(
  db: Queryable,
  statement: Statement<Row>,
): Promise<QueryResult<Row>> {
  return statement.prepare && preparesStatements(db)
    ? db.query<Row>({
        name: statement.name ?? nameOf(statement.text),
        text: statement.text,
        values: statement.values,
      })
    : db.query<Row>(statement.text, statement.values)
}

/** Runs `statement` and answers its rows. */
export async function queryRows<Row extends QueryResultRow>(
  db: Queryable,
  statement: Statement<Row>,
): Promise<Row[]> {
  return (await execute(db, statement)).rows
}

/** Runs `statement` and answers its first row (undefined when it returned none). */
export async function queryFirst<Row extends QueryResultRow>(
  db: Queryable,
  statement: Statement<Row>,
): Promise<Row | undefined> {
  return (await execute(db, statement)).rows[0]
}

/** Runs `statement` and answers its first row, which it must return. */
export async function queryOne<Row extends QueryResultRow>(
  db: Queryable,
  statement: Statement<Row>,
): Promise<Row> {
  const row = (await execute(db, statement)).rows[0]
  if (row === undefined) throw new Error(`statement returned no row: ${statement.text.slice(0, 80)}`)
  return row
}

/** Runs `statement` for its effect. */
export async function runStatement(db: Queryable, statement: Statement): Promise<void> {
  await execute(db, statement)
}

/** Runs `statement` and answers its rows (the older name of `queryRows`). */
export const queryStatement = queryRows

/**
 * A statement text built around another statement's fixed text (e.g. the audit intake's INSERT inside a creation's
 * statement): built once per distinct part, so a request neither rebuilds it nor has `named` hash a new string.
 * Only for parts that are one of a few fixed texts (a prepared statement's).
 */
export function builtOnce(build: (part: string) => string): (part: string) => string {
  const texts = new Map<string, string>()
  return (part) => {
    let text = texts.get(part)
    if (text === undefined) {
      text = build(part)
      texts.set(part, text)
    }
    return text
  }
}

/**
 * The text of a row's creation together with its audit entries: `insert` (an `INSERT … ON CONFLICT … DO NOTHING
 * RETURNING …` whose parameters are $1…$`parameters`), and the audit entries' INSERT (the part), which writes only
 * when the row is inserted. One round trip, no transaction needed.
 */
export function insertWithAudit(insert: string, parameters: number): (audit: string) => string {
  return builtOnce(
    (audit) =>
      `WITH created AS (
         ${insert}
       ), audit AS (
         ${shiftPlaceholders(audit, parameters)} WHERE EXISTS (SELECT 1 FROM created)
       )
       SELECT * FROM created`,
  )
}

/**
 * Several independent writes (INSERT, UPDATE, DELETE; none reading what another writes) as one statement:
 * `WITH w1 AS (…), w2 AS (…) <last>`. One round trip instead of one per write; the writes still commit or roll
 * back together, with the transaction they run in or as one implicit transaction of their own. Prepared when
 * every part is.
 */
export function combineWrites(statements: readonly Statement[]): Statement {
  if (statements.length === 1) return statements[0]!
  return {
    text: combinedText(COMBINED, statements, () => {
      let offset = 0
      const parts = statements.map((statement) => {
        const text = shiftPlaceholders(statement.text, offset)
        offset += statement.values.length
        return text
      })
      const last = parts.pop()!
      return `WITH ${parts.map((text, i) => `w${i + 1} AS (${text})`).join(',\n')}\n${last}`
    }),
    values: statements.flatMap((statement) => statement.values),
    prepare: statements.every((statement) => statement.prepare),
  }
}

/**
 * `writes` as one statement that writes only if `guard` returned a row (an UPDATE … RETURNING that changed it, or
 * a SELECT … FOR UPDATE that locked it), answering the rows `guard` returned: `WITH guard AS (…), w1 AS (<write>
 * WHERE EXISTS (SELECT 1 FROM guard)), … SELECT * FROM guard`. Each write must be an INSERT … SELECT without a
 * WHERE clause of its own.
 */
export function guardedWrites(guard: Statement, writes: readonly Statement[]): Statement {
  const statements = [guard, ...writes]
  return {
    text: combinedText(GUARDED, statements, () => {
      let offset = guard.values.length
      const parts = writes.map((statement, i) => {
        const text = shiftPlaceholders(statement.text, offset)
        offset += statement.values.length
        return `w${i + 1} AS (${text} WHERE EXISTS (SELECT 1 FROM guard))`
      })
      return `WITH guard AS (${guard.text}),\n${parts.join(',\n')}\nSELECT * FROM guard`
    }),
    values: statements.flatMap((statement) => statement.values),
    prepare: statements.every((statement) => statement.prepare),
  }
}

interface TextNode {
  /** The next part: its text, then its number of values (which its placeholders are shifted by). */
  next: Map<string, Map<number, TextNode>>
  text?: string
}

const COMBINED: TextNode = { next: new Map() }
const GUARDED: TextNode = { next: new Map() }
let combinedTexts = 0

/**
 * The text of statements combined from prepared parts, looked up by their parts (a tree keyed by one part after
 * another): a prepared text is one of a few fixed ones, so each combination is built once, not on every request,
 * and the same string goes to `named` every time. Parts that are not prepared may be built from data: those are
 * combined afresh each time and never kept.
 */
function combinedText(root: TextNode, statements: readonly Statement[], build: () => string): string {
  if (!statements.every((statement) => statement.prepare)) return build()
  let node = root
  for (const { text, values } of statements) {
    let byCount = node.next.get(text)
    if (byCount === undefined) {
      byCount = new Map()
      node.next.set(text, byCount)
    }
    let next = byCount.get(values.length)
    if (next === undefined) {
      next = { next: new Map() }
      byCount.set(values.length, next)
    }
    node = next
  }
  if (node.text === undefined) {
    node.text = build()
    combinedTexts += 1
  }
  return node.text
}

/** How many combined texts are kept (for tests: each combination of prepared parts is built once). */
export function keptCombinedTexts(): number {
  return combinedTexts
}
