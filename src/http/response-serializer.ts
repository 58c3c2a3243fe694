import type { FastifySerializerCompiler } from 'fastify/types/schema.js'
import type { z } from 'zod'
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

// The zod 4 definition fields this module reads.
interface Def {
  type: string
  /** The checks added to the schema (`.int()`, `.max()`, `.refine()`, …). */
  checks?: { _zod: { def: { check: string } } }[]
  /** Set when the schema is itself a check (`z.uuid()`, `z.int()`): its kind. */
  check?: string
  shape?: Record<string, z.ZodType>
  catchall?: z.ZodType
  element?: z.ZodType
  innerType?: z.ZodType
  /** Set on a coercing schema (`z.coerce.number()`). */
  coerce?: boolean
}

// The checks of a string this writer leaves unchecked: its format (`z.uuid()`, `.regex()`) and its length bounds.
const STRING_FORMATS_AND_BOUNDS = new Set(['string_format', 'min_length', 'max_length', 'length_equals'])

function buildWriter(schema: z.ZodType): Writer {
  const def = schema._zod.def as unknown as Def
  const checks = def.checks ?? []
  // Free JSON is taken as it is: zod's encode of it returns the value itself.
  if (isTakenAsIs(schema)) return asItIs
  if (def.type === 'string') {
    // Any other check (a refinement, `.trim()` rewriting the value) makes the part zod's.
    const unchecked = [...checks.map((c) => c._zod.def.check), ...(def.check ? [def.check] : [])]
    return unchecked.every((check) => STRING_FORMATS_AND_BOUNDS.has(check))
      ? typed('string', 'a string')
      : zodWriter(schema)
  }
  if (def.type === 'number') return numberWriter(schema, def)
  // Every other part with a check of any kind (bounds, refinements) is zod's.
  if (checks.length > 0 || def.check !== undefined) return zodWriter(schema)
  // `.exactOptional()` is an optional that refuses an explicit undefined.
  if (schema._zod.traits.has('$ZodExactOptional')) return zodWriter(schema)
  switch (def.type) {
    case 'boolean':
      return typed('boolean', 'a boolean')
    case 'null':
      return (value) => {
        if (value !== null) throw new ResponseMismatch('null')
        return 'null'
      }
    case 'enum':
    case 'literal':
      // The values zod itself accepts (an enum's, not the reverse names of a numeric TypeScript enum).
      return oneOf(schema._zod.values!)
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
  const strict = def.catchall?._zod.def.type === 'never'
  // A loose object keeps keys it does not name: zod writes those.
  if (def.catchall !== undefined && !strict) return undefined
  const shape = (schema as z.ZodObject).shape as Record<string, z.ZodType>
  // zod leaves a `__proto__` member out of what it outputs.
  const names = Object.keys(shape).filter((key) => key !== '__proto__')
  const keys = names.map((key) => ({
    key,
    // `"key":`, written once.
    prefix: `${JSON.stringify(key)}:`,
    write: writerOf(shape[key]!),
    // An absent key is refused unless its schema's output may lack it (an optional: as zod encodes, a default
    // or a catch does not make the key optional in what is answered).
    required: shape[key]!._zod.optout === undefined,
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

/** A number check this writer applies itself: an integer or float format's range, or a bound. */
interface NumberCheckDef {
  check: string
  when?: unknown
  format?: string
  value?: unknown
  inclusive?: boolean
}

/**
 * A number: finite, and held to its checks when they are all formats (`.int()`, `z.int32()`) and bounds (`.min()`,
 * `.max()`, `.positive()`), as zod checks them; with any other check (a multiple, a refinement) the part is zod's.
 */
function numberWriter(schema: z.ZodType, def: Def): Writer {
  // A coercing number (`z.coerce.number()`) rewrites what it is given: zod's.
  if (def.coerce) return zodWriter(schema)
  const checks = [
    ...(def.check !== undefined ? [def as unknown as NumberCheckDef] : []),
    ...(def.checks ?? []).map((c) => c._zod.def as NumberCheckDef),
  ]
  const tests: ((value: number) => boolean)[] = []
  for (const check of checks) {
    // A check applied only `when` a condition holds is zod's to apply.
    if (check.when !== undefined) return zodWriter(schema)
    if (
      check.check === 'number_format' &&
      check.format !== undefined &&
      check.format in NUMBER_FORMAT_RANGES
    ) {
      const [minimum, maximum] = NUMBER_FORMAT_RANGES[check.format as keyof typeof NUMBER_FORMAT_RANGES]
      const integer = check.format.includes('int')
      tests.push((value) => (!integer || Number.isInteger(value)) && value >= minimum && value <= maximum)
    } else if (
      (check.check === 'greater_than' || check.check === 'less_than') &&
      typeof check.value === 'number'
    ) {
      const bound = check.value
      tests.push(
        check.check === 'greater_than'
          ? check.inclusive
            ? (value) => value >= bound
            : (value) => value > bound
          : check.inclusive
            ? (value) => value <= bound
            : (value) => value < bound,
      )
    } else {
      return zodWriter(schema)
    }
  }
  const expected = tests.length === 0 ? 'a number' : 'a number its schema accepts'
  return (value) => {
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new ResponseMismatch(expected)
    for (const test of tests) if (!test(value)) throw new ResponseMismatch(expected)
    return JSON.stringify(value)
  }
}

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
  return typeof value === 'object' && value !== null && '_zod' in value
}
