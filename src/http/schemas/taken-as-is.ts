import type { z } from 'zod'

const takenAsIsSchemas = new WeakSet<z.ZodType>()

/**
 * `schema` made to take any value but undefined as it is, unchecked and unchanged, while its definition (and so
 * its JSON Schema) stays as written. For free JSON, which the JSON body parser has already held to I-JSON: walking
 * it again through zod would only hold the event loop. zod calls a schema's `_zod.run` (its parse, without checks
 * here) from every parent, so replacing both on this one instance is enough.
 */
export function takenAsIs<T extends z.ZodType>(schema: T): T {
  const run: T['_zod']['run'] = (payload) => {
    if (payload.value === undefined) {
      payload.issues.push({
        code: 'invalid_type',
        expected: 'unknown',
        input: undefined,
        inst: schema,
        message: 'Invalid input: expected a JSON value',
      } as (typeof payload.issues)[number])
    }
    return payload
  }
  schema._zod.parse = run
  schema._zod.run = run
  takenAsIsSchemas.add(schema)
  return schema
}

/** Whether `schema` was made by `takenAsIs`: its output is its input. */
export function isTakenAsIs(schema: z.ZodType): boolean {
  return takenAsIsSchemas.has(schema)
}
