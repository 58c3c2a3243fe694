import type { Queryable } from './pool.ts'

/** A parameterised SQL statement, built apart from running it so several can be sent as one. */
export interface Statement {
  text: string
  values: unknown[]
}

/** `text` with every `$n` placeholder moved up by `offset`. */
export function shiftPlaceholders(text: string, offset: number): string {
  return offset === 0 ? text : text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)
}

/**
 * Several independent writes (INSERT, UPDATE, DELETE; none reading what another writes) as one statement:
 * `WITH w1 AS (…), w2 AS (…) <last>`. One round trip instead of one per write; the writes still commit or roll
 * back together, with the transaction they run in or as one implicit transaction of their own.
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
  return { text: `WITH ${parts.map((text, i) => `w${i + 1} AS (${text})`).join(',\n')}\n${last}`, values }
}

export async function runStatement(db: Queryable, statement: Statement): Promise<void> {
  await db.query(statement.text, statement.values)
}
