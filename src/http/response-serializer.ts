import type { FastifySerializerCompiler } from 'fastify/types/schema.js'
import { z } from 'zod'
import { isTakenAsIs } from './schemas/taken-as-is.ts'

/**
 * Response bodies as JSON text, written by a serializer compiled once per route from its zod response schema.
 *
 * zod's own encode (what fastify-type-provider-zod's serializer runs on every response) walks the value through
 * its generic machinery, building a new object on the way, and only then is it stringified: on the write path
 * that was most of a response's cost. The compiled serializer writes the text in one walk and holds the value to
 * the same shape: an object's keys are the schema's (unknown keys are left out, as zod strips them; a strict
 * object refuses them), every value has its schema's JSON type, enums and literals their values, and a key the
 * output may not lack its value. A string's format and length bounds (a uuid's form, a maximum length) are not
 * checked again: the response types hold handlers to them. A number is held to its formats (`.int()`) and bounds
 * as zod holds it, and free JSON (see takenAsIs) is written as it is. Every other check (a refinement, a multiple,
 * a rewrite such as `.trim()`) and every part this writer does not know (unions, records, lazy or transformed
 * schemas, exact optionals, coercion) is encoded by zod as before, that part alone, so the text is zod's.
 *
 * A value that does not fit throws `ResponseNotSerializable`, which the error handler logs and answers with a 500.
 */
export const responseSerializerCompiler: FastifySerializerCompiler<unknown> = ({ schema, method, url }) => {
  const write = writerOf(resolveSchema(schema))
  return (data) => {
    try {
      const text = write(data)
      if (text === undefined) throw new ResponseMismatch('a JSON value')
      return text
    } catch (err) {
      if (err instanceof ResponseMismatch) err.settle()
      throw new ResponseNotSerializable(method, url, err)
    }
  }
}

/** A route's answer does not fit its response schema: a defect of the route, answered with a 500. */
export class ResponseNotSerializable extends Error {
  constructor(method: string, url: string, cause: unknown) {
    super(`the response of ${method} ${url} does not fit its schema`, { cause })
    this.name = 'ResponseNotSerializable'
  }
}

/** Writes `value` as JSON text, or undefined for a value an object leaves out (an absent optional key). */
type Writer = (value: unknown) => string | undefined

/**
 * Where a value misfits and what was expected there. Writers pass no path down (building one for every member of
 * every answer cost more than the check itself): each object and array adds its key to the error as it passes
 * through, and `settle` writes the message once the error reaches the top.
 */
class ResponseMismatch extends Error {
  /** The keys from the misfit value up to the root, innermost first. */
  private readonly keys: (string | number)[] = []

  constructor(private readonly expected: string) {
    super(`expected ${expected}`)
    this.name = 'ResponseMismatch'
  }

  /** Passes through the member `key` of an object or array on its way up. */
  static within(err: unknown, key: string | number): never {
    if (err instanceof ResponseMismatch) err.keys.push(key)
    throw err
  }

  settle(): void {
    const path = this.keys
      .reverse()
      .map((key) => `/${key}`)
      .join('')
    this.keys.length = 0
    this.message = `response ${path || '(root)'}: expected ${this.expected}`
  }
}

const writers = new WeakMap<z.ZodType, Writer>()

/** `writerOf(schema)` with the misfit's path in its message, as the compiled serializer throws it. */
export function writeChecked(schema: z.ZodType, value: unknown): string | undefined {
  try {
    return writerOf(schema)(value)
  } catch (err) {
    if (err instanceof ResponseMismatch) err.settle()
    throw err
  }
}

/** The writer of a response schema (route schemas share parts, so each part's is built once). */
export function writerOf(schema: z.ZodType): Writer {
  const known = writers.get(schema)
  if (known !== undefined) return known
  // A schema that contains itself (through a getter) meets this forwarder while its own writer is being built.
  let built: Writer | undefined
  writers.set(schema, (value) => built!(value))
  try {
    built = buildWriter(schema)
  } catch (err) {
    writers.delete(schema)
    throw err
  }
  writers.set(schema, built)
  return built
}

// The fields of a zod 4 schema's public definition (`schema.def`) this module reads.
interface Def {
  type: string
  /** The checks added to the schema (`.int()`, `.max()`, `.refine()`, …). */
  checks?: z.core.$ZodCheck[]
  shape?: Record<string, z.ZodType>
  catchall?: z.ZodType
  element?: z.ZodType
  innerType?: z.ZodType
  /** Set on a coercing schema (`z.coerce.number()`). */
  coerce?: boolean
}

/** The checks of a schema: those added to it, and the schema itself when it is one (`z.uuid()`, `z.int()`). */
function checksOf(schema: z.ZodType, def: Def): z.core.$ZodCheck[] {
  const own = def.checks ?? []
  return schema instanceof z.core.$ZodCheck ? [schema, ...own] : own
}

// The checks of a string this writer leaves unchecked: its format (`z.uuid()`, `.regex()`) and its length bounds.
const STRING_FORMATS_AND_BOUNDS = [
  z.core.$ZodCheckStringFormat,
  z.core.$ZodCheckMinLength,
  z.core.$ZodCheckMaxLength,
  z.core.$ZodCheckLengthEquals,
]

// The checks of a number this writer applies itself: its format (`.int()`, `z.int32()`) and its bounds.
const NUMBER_FORMATS_AND_BOUNDS = [
  z.core.$ZodCheckNumberFormat,
  z.core.$ZodCheckGreaterThan,
  z.core.$ZodCheckLessThan,
]

function allOf(
  checks: z.core.$ZodCheck[],
  kinds: readonly (abstract new (...args: never[]) => unknown)[],
): boolean {
  return checks.every((check) => kinds.some((kind) => check instanceof kind))
}

function buildWriter(schema: z.ZodType): Writer {
  const def = schema.def as unknown as Def
  const checks = checksOf(schema, def)
  // Free JSON is taken as it is: zod's encode of it returns the value itself.
  if (isTakenAsIs(schema)) return asItIs
  if (def.type === 'string') {
    // Any other check (a refinement, `.trim()` rewriting the value) makes the part zod's.
    return allOf(checks, STRING_FORMATS_AND_BOUNDS) ? typed('string', 'a string') : zodWriter(schema)
  }
  if (def.type === 'number') return numberWriter(schema, def, checks)
  // Every other part with a check of any kind (bounds, refinements) is zod's.
  if (checks.length > 0) return zodWriter(schema)
  // `.exactOptional()` is an optional that refuses an explicit undefined.
  if (schema instanceof z.ZodExactOptional) return zodWriter(schema)
  switch (def.type) {
    case 'boolean':
      return typed('boolean', 'a boolean')
    case 'null':
      return (value) => {
        if (value !== null) throw new ResponseMismatch('null')
        return 'null'
      }
    case 'enum':
      // The values zod itself accepts (an enum's, not the reverse names of a numeric TypeScript enum).
      return oneOf(new Set((schema as z.ZodEnum).options))
    case 'literal':
      return oneOf((schema as z.ZodLiteral).values)
    case 'nullable': {
      const inner = writerOf(def.innerType!)
      return (value) => (value === null ? 'null' : inner(value))
    }
    case 'optional': {
      const inner = writerOf(def.innerType!)
      return (value) => (value === undefined ? undefined : inner(value))
    }
    case 'array': {
      const element = writerOf(def.element!)
      return (value) => {
        if (!Array.isArray(value)) throw new ResponseMismatch('an array')
        let text = '['
        for (let i = 0; i < value.length; i++) {
          let item: string | undefined
          try {
            item = element(value[i])
          } catch (err) {
            ResponseMismatch.within(err, i)
          }
          text += (i === 0 ? '' : ',') + (item ?? 'null')
        }
        return `${text}]`
      }
    }
    case 'object':
      return objectWriter(schema, def) ?? zodWriter(schema)
  }
  return zodWriter(schema)
}

function objectWriter(schema: z.ZodType, def: Def): Writer | undefined {
  const strict = def.catchall instanceof z.ZodNever
  // A loose object keeps keys it does not name: zod writes those.
  if (def.catchall !== undefined && !strict) return undefined
  const shape = (schema as z.ZodObject).shape as Record<string, z.ZodType>
  // zod leaves a `__proto__` member out of what it outputs.
  const names = Object.keys(shape).filter((key) => key !== '__proto__')
  // Whether the output may lack a key, as zod states it in the object's JSON Schema (an optional may be absent;
  // a default or a catch does not make the key optional in what is answered).
  const { required = [] } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' })
  const keys = names.map((key) => ({
    key,
    // `"key":`, written once.
    prefix: `${JSON.stringify(key)}:`,
    write: writerOf(shape[key]!),
    required: required.includes(key),
  }))
  const known = new Set(Object.keys(shape))
  return (value) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ResponseMismatch('an object')
    }
    const record = value as Record<string, unknown>
    if (strict) {
      for (const key in record) {
        if (!known.has(key)) ResponseMismatch.within(new ResponseMismatch('no such key'), key)
      }
    }
    let text = '{'
    for (const { key, prefix, write, required } of keys) {
      const value = record[key]
      if (value === undefined && !(key in record)) {
        if (required) ResponseMismatch.within(new ResponseMismatch('a value'), key)
        continue
      }
      let member: string | undefined
      try {
        member = write(value)
      } catch (err) {
        ResponseMismatch.within(err, key)
      }
      if (member === undefined) continue
      text += (text.length === 1 ? '' : ',') + prefix + member
    }
    return `${text}}`
  }
}

const asItIs: Writer = (value) => {
  if (value === undefined) throw new ResponseMismatch('a JSON value')
  return JSON.stringify(value)
}

/**
 * A number: finite, and held to its checks when they are all formats (`.int()`, `z.int32()`) and bounds (`.min()`,
 * `.max()`, `.positive()`), as zod checks them; with any other check (a multiple, a refinement) the part is zod's.
 * The bounds are read from the schema's JSON Schema, which states each as inclusive or exclusive.
 */
function numberWriter(schema: z.ZodType, def: Def, checks: z.core.$ZodCheck[]): Writer {
  // A coercing number (`z.coerce.number()`) rewrites what it is given: zod's.
  if (def.coerce || !allOf(checks, NUMBER_FORMATS_AND_BOUNDS)) return zodWriter(schema)
  const tests: ((value: number) => boolean)[] = []
  const format = (schema as z.ZodNumber).format
  if (format !== null) {
    if (!(format in NUMBER_FORMAT_RANGES)) return zodWriter(schema)
    const [minimum, maximum] = NUMBER_FORMAT_RANGES[format as keyof typeof NUMBER_FORMAT_RANGES]
    const integer = format.includes('int')
    tests.push((value) => (!integer || Number.isInteger(value)) && value >= minimum && value <= maximum)
  }
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum } = z.toJSONSchema(schema, {
    io: 'output',
    unrepresentable: 'any',
  })
  const bounds: number[] = []
  for (const [bound, test] of [
    [minimum, (value: number, min: number) => value >= min],
    [maximum, (value: number, max: number) => value <= max],
    [exclusiveMinimum, (value: number, min: number) => value > min],
    [exclusiveMaximum, (value: number, max: number) => value < max],
  ] as const) {
    if (typeof bound !== 'number') continue
    bounds.push(bound)
    tests.push((value) => test(value, bound))
  }
  const accepts = (value: number) => Number.isFinite(value) && tests.every((test) => test(value))
  // A check the schema's description does not show (one that applies only `when` a condition holds) would make
  // these tests disagree with zod: asked at the edges of every bound and format, zod must answer the same.
  const probes = [
    ...NUMBER_PROBES,
    ...bounds.flatMap((bound) => [bound - 1, bound - 0.5, bound, bound + 0.5, bound + 1]),
  ]
  if (probes.some((value) => accepts(value) !== schema.safeParse(value).success)) return zodWriter(schema)
  const expected = checks.length === 0 ? 'a number' : 'a number its schema accepts'
  return (value) => {
    if (typeof value !== 'number' || !accepts(value)) throw new ResponseMismatch(expected)
    return JSON.stringify(value)
  }
}

const NUMBER_PROBES = [
  0,
  -0,
  1,
  -1,
  1.5,
  -1.5,
  2 ** 31,
  -(2 ** 31) - 1,
  2 ** 32,
  2 ** 53,
  -(2 ** 53),
  1e39,
  -1e39,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
]

/** The ranges of zod's number formats (`z.int()` is `safeint`). */
const NUMBER_FORMAT_RANGES = {
  safeint: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
  float32: [-3.4028234663852886e38, 3.4028234663852886e38],
  float64: [-Number.MAX_VALUE, Number.MAX_VALUE],
} as const

function typed(type: 'string' | 'boolean', expected: string): Writer {
  return (value) => {
    if (typeof value !== type) throw new ResponseMismatch(expected)
    return JSON.stringify(value)
  }
}

function oneOf(allowed: ReadonlySet<unknown>): Writer {
  const values = [...allowed]
  const expected = `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`
  return (value) => {
    if (!allowed.has(value)) throw new ResponseMismatch(expected)
    return JSON.stringify(value)
  }
}

/** The part written by zod: encoded (checked, stripped, transformed), then stringified. */
function zodWriter(schema: z.ZodType): Writer {
  return (value) => {
    const result = schema.safeEncode(value as never)
    if (!result.success) throw new ResponseMismatch(`a value its schema accepts (${result.error.message})`)
    return JSON.stringify(result.data)
  }
}

function resolveSchema(schema: unknown): z.ZodType {
  if (isZod(schema)) return schema
  throw new Error(`a response schema is not a zod schema: ${JSON.stringify(schema)}`)
}

function isZod(value: unknown): value is z.ZodType {
  return value instanceof z.core.$ZodType
}
