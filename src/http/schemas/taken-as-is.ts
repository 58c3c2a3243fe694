import { z } from 'zod'

const takenAsIsSchemas = new WeakSet<z.ZodType>()

/**
 * Any JSON value but undefined, taken as it is: checked for presence only (`z.custom`), never walked. For free
 * JSON, which the JSON body parser has already held to I-JSON: walking it again through zod would only hold the
 * event loop (bench/README.md, "Figures behind the code"). A JSON Schema converter cannot see inside a custom
 * check, so the schema is registered under `id` and its definition is written by `withJsonValueDefinition`.
 */
export function jsonValueTakenAsIs(meta: {
  id: string
  description: string
}): z.ZodType<z.core.util.JSONType> {
  return takenAsIs(
    z
      .custom<z.core.util.JSONType>((value) => value !== undefined, {
        message: 'Invalid input: expected a JSON value',
      })
      .meta(meta),
  )
}

/** Marks `schema` as one whose output is its input: the response serializer writes its value as it is. */
export function takenAsIs<T extends z.ZodType>(schema: T): T {
  takenAsIsSchemas.add(schema)
  return schema
}

/** Whether `schema` was marked by `takenAsIs`: its output is its input. */
export function isTakenAsIs(schema: z.ZodType): boolean {
  return takenAsIsSchemas.has(schema)
}

/**
 * `definitions` (an OpenAPI document's `components.schemas`, a JSON Schema's `$defs`) with the definition of the
 * JSON value registered under `id` written out: a string, number, boolean, null, or an array or object of JSON
 * values, which it refers to as `self` (`#/components/schemas/<id>`, `#/$defs/<id>`).
 */
export function withJsonValueDefinition(
  definitions: Record<string, Record<string, unknown>> | undefined,
  id: string,
  self: string,
): void {
  const definition = definitions?.[id]
  if (definition === undefined) return
  definition.anyOf = [
    { type: 'string' },
    { type: 'number' },
    { type: 'boolean' },
    { type: 'null' },
    { type: 'array', items: { $ref: self } },
    { type: 'object', propertyNames: { type: 'string' }, additionalProperties: { $ref: self } },
  ]
}
