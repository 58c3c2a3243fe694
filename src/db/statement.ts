import type { QueryResultRow } from 'pg'
import type { NamedQuery, Queryable } from './pool.ts'

/** A parameterised SQL statement, built apart from running it so several can be sent as one. */
export interface Statement {
  text: string
  values: unknown[]
  /**
   * Prepare it once per connection (see `named`). Only for a text that is one of a few, never built from data:
   * each connection keeps every statement it prepared.
   */
  prepare?: boolean
}

const names = new Map<string, string>()

/**
 * `text` as a named statement: parsed and planned once per connection, then only bound and run, which saves the
 * database most of its work on the statements every request sends. The same text gets the same name everywhere.
 * Only for a text that is one of a few, never built from data: each connection keeps every statement it prepared.
 * (A pool made with `namedStatements: false` runs it unnamed: see PoolOptions.namedStatements.)
 */
export function named(text: string, values: unknown[]): NamedQuery {
  let name = names.get(text)
  if (name === undefined) {
    name = `arbiter_${names.size + 1}`
    names.set(text, name)
  }
  return { name, text, values }
}

/** `text` with every `$n` placeholder moved up by `offset`. */
export function shiftPlaceholders(text: string, offset: number): string {
  return offset === 0 ? text : text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)
}

/**
 * Several independent writes (INSERT, UPDATE, DELETE; none reading what another writes) as one statement:
 * `WITH w1 AS (…), w2 AS (…) <last>`. One round trip instead of one per write; the writes still commit or roll
 * back together, with the transaction they run in or as one implicit transaction of their own. Prepared when
 * every part is.
 */
export function combineWrites(statements: readonly Statement[]): Statement {
  if (statements.length === 1) return statements[0]!
  const values: unknown[] = []
  const parts = statements.map((statement) => {
    const text = shiftPlaceholders(statement.text, values.length)
    values.push(...statement.values)
    return text
  })
  const last = parts.pop()!
  return {
    text: `WITH ${parts.map((text, i) => `w${i + 1} AS (${text})`).join(',\n')}\n${last}`,
    values,
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
  const values: unknown[] = [...guard.values]
  const parts = writes.map((statement, i) => {
    const text = shiftPlaceholders(statement.text, values.length)
    values.push(...statement.values)
    return `w${i + 1} AS (${text} WHERE EXISTS (SELECT 1 FROM guard))`
  })
  return {
    text: `WITH guard AS (${guard.text}),\n${parts.join(',\n')}\nSELECT * FROM guard`,
    values,
    prepare: guard.prepare && writes.every((statement) => statement.prepare),
  }
}

export async function runStatement(db: Queryable, statement: Statement): Promise<void> {
  await queryStatement(db, statement)
}

/** Runs `statement` and answers its rows. */
export async function queryStatement<R extends QueryResultRow = QueryResultRow>(
  db: Queryable,
  statement: Statement,
): Promise<R[]> {
  const result = statement.prepare
    ? await db.query<R>(named(statement.text, statement.values))
    : await db.query<R>(statement.text, statement.values)
  return result.rows
}
