import { z } from 'zod'
import { JSON_VALUE_ID, uuidParam } from '../http/schemas/common.ts'
import { withJsonValueDefinition } from '../http/schemas/taken-as-is.ts'

/*
 * A tool's arguments are the route's JSON body with the route's path ids beside it, as extra fields
 * (`submit_verdict` takes `{review_id, judge_id, revision, status, …}`). Both the JSON Schema a host is shown and
 * the check the arguments go through are the route's own zod schema, so a tool accepts exactly what the route does
 * and names the same fields when it does not.
 */

/** One field error, as a JSON Pointer into the tool's arguments and what is wrong there. */
export interface ArgumentError {
  path: string
  message: string
}

export type JsonSchemaObject = { type: 'object'; [key: string]: unknown }

/** The arguments split back into the path ids and the body the route takes, or the field errors. */
export type ParsedArguments =
  | { ok: true; ids: Record<string, string>; body: Record<string, unknown> }
  | { ok: false; errors: ArgumentError[] }

export interface ToolInput {
  /** Path ids, each with what it names: `{review_id: 'the review, as returned by create_review'}`. */
  ids: Record<string, string>
  /** The route's body (or query) schema; none when the route takes neither. */
  body?: z.ZodType
}

/** The route schema without the `.nullish()` some bodies carry (an absent body): a tool's arguments are an object. */
function objectSchemaOf(schema: z.ZodType): z.ZodType {
  let current = schema
  while (current instanceof z.ZodOptional || current instanceof z.ZodNullable)
    current = current.unwrap() as z.ZodType
  return current
}

const idJsonSchema = (description: string) => ({
  ...(z.toJSONSchema(uuidParam) as Record<string, unknown>),
  $schema: undefined,
  description,
})

/**
 * The JSON Schema of a tool's arguments: the route schema as JSON Schema (its shared definitions kept in `$defs`),
 * with each path id added as a required property — to every branch when the body is a union (the status report
 * of worker results and verdicts), since each branch refuses properties it does not list.
 */
export function toolInputJsonSchema(input: ToolInput): JsonSchemaObject {
  let root: Record<string, unknown> = input.body
    ? (z.toJSONSchema(objectSchemaOf(input.body), { io: 'input', unrepresentable: 'any' }) as Record<
        string,
        unknown
      >)
    : { type: 'object', properties: {}, additionalProperties: false }
  const defs = root.$defs as Record<string, Record<string, unknown>> | undefined
  withJsonValueDefinition(defs, JSON_VALUE_ID, `#/$defs/${JSON_VALUE_ID}`)
  // A schema registered under a name comes out as `{$ref: '#/$defs/Name'}`: a host wants the object at the root.
  const ref = typeof root.$ref === 'string' ? /^#\/\$defs\/(.+)$/.exec(root.$ref)?.[1] : undefined
  if (ref !== undefined && defs?.[ref]) {
    const { $ref: _ref, ...rest } = root
    root = { ...rest, ...structuredClone(defs[ref]) }
    if (!JSON.stringify(root).includes(`"#/$defs/${ref}"`)) delete defs[ref]
  }
  const branches = (root.oneOf ?? root.anyOf) as Record<string, unknown>[] | undefined
  for (const target of branches ?? [root]) {
    const properties = (target.properties ?? {}) as Record<string, unknown>
    const required = (target.required ?? []) as string[]
    for (const [name, description] of Object.entries(input.ids)) properties[name] = idJsonSchema(description)
    target.properties = { ...properties }
    target.required = [...Object.keys(input.ids), ...required]
  }
  const { $schema: _dialect, ...schema } = root
  return JSON.parse(JSON.stringify({ ...schema, type: 'object' })) as JsonSchemaObject
}

const pointer = (path: readonly PropertyKey[]) =>
  `/${path.map((key) => String(key).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`

/** A zod error as field errors, one per unknown key (as the HTTP layer reports them). */
export function argumentErrors(error: z.ZodError, prefix: readonly PropertyKey[] = []): ArgumentError[] {
  return error.issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path]
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ path: pointer([...path, key]), message: 'unknown field' }))
    }
    return [{ path: pointer(path), message: issue.message }]
  })
}

/**
 * Checks a tool's arguments with the route's schemas: each path id a UUID, the rest the route's body. The body is
 * handed on as given (not as zod's output), so what the service receives, and hashes, is what the agent sent.
 */
export function parseToolArguments(
  input: ToolInput,
  args: Record<string, unknown> | undefined,
): ParsedArguments {
  const errors: ArgumentError[] = []
  const ids: Record<string, string> = {}
  const body: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(args ?? {})) {
    if (!(name in input.ids)) body[name] = value
  }
  for (const name of Object.keys(input.ids)) {
    const result = uuidParam.safeParse(args?.[name])
    if (result.success) ids[name] = result.data
    else
      errors.push({
        path: pointer([name]),
        message: args?.[name] === undefined ? 'required' : 'must be a UUID',
      })
  }
  if (input.body) {
    const result = input.body.safeParse(body)
    if (!result.success) errors.push(...argumentErrors(result.error))
  } else {
    for (const name of Object.keys(body)) errors.push({ path: pointer([name]), message: 'unknown field' })
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, ids, body }
}
