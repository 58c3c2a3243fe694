import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import { z } from 'zod'
import { fanoutSchema, reconciliationEnvelopeSchema } from '../../src/cases/fanout/schemas.ts'
import { OUTCOME_STORY } from '../../src/cases/outcome/routes.ts'
import {
  createOutcomeBody,
  interpretationCreatedSchema,
  outcomeEnvelopeSchema,
  outcomeSchema,
  pendingSchema,
} from '../../src/cases/outcome/schemas.ts'
import { registeredCaseSchemas } from '../../src/cases/registry.ts'
import { reviewEnvelopeSchema, reviewSchema, verdictAnswerSchema } from '../../src/cases/review/schemas.ts'
import { caseStorySchema } from '../../src/http/case-routes.ts'
import { problemSchema } from '../../src/http/errors.ts'
import {
  ResponseNotSerializable,
  responseSerializerCompiler,
  writeChecked,
} from '../../src/http/response-serializer.ts'
import { freeJson } from '../../src/http/schemas/common.ts'
import {
  consistencyProofSchema,
  inclusionProofSchema,
  signedCheckpointSchema,
} from '../../src/http/schemas/log.ts'
import { takenAsIs } from '../../src/http/schemas/taken-as-is.ts'
import { buildTestApp } from '../helpers/app.ts'
import { createOutcome, interpret } from '../helpers/fixtures.ts'

const outcomeStorySchema = caseStorySchema(OUTCOME_STORY, registeredCaseSchemas().auditRecord)

/** What zod's own encode writes for `value`, or the error it throws. */
function byZod(schema: z.ZodType, value: unknown): { text: string | undefined } | { error: true } {
  const result = schema.safeEncode(value as never)
  return result.success ? { text: JSON.stringify(result.data) } : { error: true }
}

/** The compiled writer's answer, in the same form. */
function byWriter(schema: z.ZodType, value: unknown): { text: string | undefined } | { error: true } {
  try {
    return { text: writeChecked(schema, value) }
  } catch {
    return { error: true }
  }
}

function assertSameAsZod(schema: z.ZodType, value: unknown, label: string): void {
  assert.deepEqual(byWriter(schema, value), byZod(schema, value), label)
}

const EXAMPLED = {
  outcomeSchema,
  interpretationCreatedSchema,
  outcomeEnvelopeSchema,
  outcomeStorySchema,
  pendingSchema,
  createOutcomeBody,
  problemSchema,
  fanoutSchema,
  reconciliationEnvelopeSchema,
  reviewSchema,
  reviewEnvelopeSchema,
  verdictAnswerSchema,
  signedCheckpointSchema,
  inclusionProofSchema,
  consistencyProofSchema,
}

describe('compiled response serializer', () => {
  it("writes every documented example of the API's schemas exactly as zod's encode and JSON.stringify do", () => {
    let compared = 0
    for (const [name, schema] of Object.entries(EXAMPLED)) {
      const examples = (z.globalRegistry.get(schema)?.examples ?? []) as unknown[]
      for (const [i, example] of examples.entries()) {
        const expected = byZod(schema, example)
        assert.ok('text' in expected, `${name} example ${i} fits its schema`)
        assertSameAsZod(schema, example, `${name} example ${i}`)
        compared += 1
      }
    }
    assert.ok(compared >= 12, `compared ${compared} examples`)
  })

  it('leaves out keys the schema does not name, and optional keys that are absent, as zod strips them', () => {
    const schema = z.object({ a: z.string(), b: z.number().optional(), c: z.array(z.string().optional()) })
    const value = { c: ['x', undefined], extra: 'secret', a: 'y' }
    assert.equal(writeChecked(schema, value), '{"a":"y","c":["x",null]}')
    assertSameAsZod(schema, value, 'stripped')
    assertSameAsZod(schema, { a: 'y', b: 1.5, c: [] }, 'with optional')
  })

  it('refuses what zod refuses: a missing key, a wrong type, a value outside an enum, an unknown key of a strict object', () => {
    const schema = z.object({
      id: z.string(),
      n: z.number().nullable(),
      kind: z.enum(['a', 'b']),
      lit: z.literal('outcome'),
      flag: z.boolean(),
      inner: z.strictObject({ x: z.string() }),
      list: z.array(z.number()),
    })
    const valid = { id: 'i', n: null, kind: 'a', lit: 'outcome', flag: true, inner: { x: 'x' }, list: [1, 2] }
    assertSameAsZod(schema, valid, 'valid')
    assert.ok('text' in byWriter(schema, valid))
    const invalid: Record<string, unknown>[] = [
      { ...valid, id: undefined },
      { ...valid, id: 1 },
      { ...valid, n: undefined },
      { ...valid, n: '1' },
      { ...valid, n: Number.NaN },
      { ...valid, n: Number.POSITIVE_INFINITY },
      { ...valid, kind: 'c' },
      { ...valid, lit: 'review' },
      { ...valid, flag: 'true' },
      { ...valid, inner: { x: 'x', y: 'y' } },
      { ...valid, inner: null },
      { ...valid, inner: ['x'] },
      { ...valid, list: { 0: 1 } },
      { ...valid, list: [1, '2'] },
    ]
    for (const [i, value] of invalid.entries()) {
      assert.deepEqual(byWriter(schema, value), { error: true }, `invalid ${i}`)
      assertSameAsZod(schema, value, `invalid ${i}`)
    }
  })

  it('leaves to zod the parts it does not write itself (unions, records, refinements, rewriting checks), and writes free JSON as it is', () => {
    const schema = z.object({
      either: z.union([z.string(), z.object({ env: z.string() })]),
      map: z.record(z.string(), z.number()),
      free: freeJson,
      trimmed: z.string().trim(),
      checked: z.object({ a: z.number(), b: z.number() }).refine((v) => v.a < v.b),
    })
    const cases: unknown[] = [
      {
        either: 'x',
        map: { a: 1 },
        free: { deep: [1, null, 'x'] },
        trimmed: ' padded ',
        checked: { a: 1, b: 2 },
      },
      { either: { env: 'E', other: 1 }, map: {}, free: null, trimmed: 'x', checked: { a: 1, b: 2 } },
      { either: 1, map: {}, free: 1, trimmed: 'x', checked: { a: 1, b: 2 } },
      { either: 'x', map: { a: 'one' }, free: 1, trimmed: 'x', checked: { a: 1, b: 2 } },
      { either: 'x', map: {}, free: undefined, trimmed: 'x', checked: { a: 1, b: 2 } },
      { either: 'x', map: {}, free: 1, trimmed: 'x', checked: { a: 2, b: 1 } },
    ]
    for (const [i, value] of cases.entries()) assertSameAsZod(schema, value, `case ${i}`)
    assert.equal(
      writeChecked(schema, cases[0]),
      '{"either":"x","map":{"a":1},"free":{"deep":[1,null,"x"]},"trimmed":"padded","checked":{"a":1,"b":2}}',
    )
  })

  it('holds numbers to their formats and bounds as zod does, and leaves any other number check to zod', () => {
    // A check that applies only `when` its condition holds (here never): zod's to apply.
    const conditionalMax = z.lte(10)
    conditionalMax._zod.def.when = () => false
    const schemas: [string, z.ZodType][] = [
      ['number', z.number()],
      ['.int()', z.number().int()],
      ['z.int()', z.int()],
      ['z.int32()', z.int32()],
      ['z.uint32()', z.uint32()],
      ['z.float32()', z.float32()],
      ['z.float64()', z.float64()],
      ['min/max', z.number().min(0).max(10)],
      ['int min', z.int().min(1)],
      ['positive', z.number().positive()],
      ['negative', z.number().negative()],
      ['nonnegative int', z.number().int().nonnegative()],
      ['gt/lt', z.number().gt(1).lt(5)],
      ['multipleOf', z.number().multipleOf(2)],
      ['conditional bound', z.number().check(conditionalMax)],
      ['coerced', z.coerce.number().min(1)],
      ['refined', z.int().refine((n) => n !== 3)],
    ]
    const values: unknown[] = [
      0,
      -0,
      1,
      1.5,
      -1,
      3,
      5,
      10,
      11,
      2 ** 31,
      2 ** 32,
      2 ** 53,
      2 ** 60,
      -(2 ** 60),
      1e39,
      -1e39,
      Number.MAX_VALUE,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      '1',
      null,
      undefined,
      true,
    ]
    for (const [label, schema] of schemas) {
      for (const value of values)
        assertSameAsZod(z.object({ n: schema }), { n: value }, `${label}: ${String(value)}`)
    }
  })

  it('writes numbers held to formats and bounds, and free JSON, without calling zod', () => {
    const count = z.int().min(0)
    const ratio = z.number().positive().max(1)
    const free = takenAsIs(z.unknown())
    for (const schema of [count, ratio, free]) {
      schema.safeEncode = () => {
        throw new Error('zod was called')
      }
    }
    const schema = z.object({ count, ratio, free })
    assert.equal(
      writeChecked(schema, { count: 3, ratio: 0.5, free: { a: [1, 'x', null] } }),
      '{"count":3,"ratio":0.5,"free":{"a":[1,"x",null]}}',
    )
    assert.throws(() => writeChecked(schema, { count: -1, ratio: 0.5, free: 1 }), /count: expected a number/)
  })

  it('leaves every check but a string format or length bound, a number format or a number bound to zod', () => {
    const schema = z.object({
      count: z.number().int(),
      int: z.int(),
      bounded: z.number().min(0).max(10),
      even: z.number().refine((n) => n % 2 === 0),
      flag: z.boolean().refine((b) => b),
      year: z.string().refine((v) => v.startsWith('2')),
      id: z.uuid(),
      short: z.string().max(3),
    })
    const valid = {
      count: 1,
      int: 2,
      bounded: 3,
      even: 4,
      flag: true,
      year: '2026',
      id: randomUUID(),
      short: 'abc',
    }
    assertSameAsZod(schema, valid, 'valid')
    assert.ok('text' in byWriter(schema, valid))
    for (const [key, value] of Object.entries({
      count: 1.5,
      int: 2 ** 60,
      bounded: 11,
      even: 3,
      flag: false,
      year: '1999',
    })) {
      assert.deepEqual(byWriter(schema, { ...valid, [key]: value }), { error: true }, key)
    }
    // Formats and length bounds are the response types' to hold, not checked again.
    assert.ok('text' in byWriter(schema, { ...valid, id: 'not-a-uuid', short: 'longer' }))
  })

  it('refuses an absent key exactly where zod does, and an explicit undefined where an exact optional refuses it', () => {
    const schemas: [string, z.ZodType][] = [
      ['unknown', z.object({ a: z.unknown() })],
      ['any', z.object({ a: z.any() })],
      ['undefined literal', z.object({ a: z.literal(undefined) })],
      ['optional', z.object({ a: z.string().optional() })],
      ['exact optional', z.object({ a: z.string().exactOptional() })],
      ['default', z.object({ a: z.string().default('x') })],
      ['catch', z.object({ a: z.string().catch('x') })],
      ['strict', z.strictObject({ a: z.string() })],
      ['proto', z.object({ ['__proto__']: z.string(), b: z.string() })],
    ]
    const values: unknown[] = [{}, { a: undefined }, { a: 'x' }, { a: 'x', b: undefined }, { a: 'x', b: 'y' }]
    for (const [name, schema] of schemas) {
      for (const [i, value] of values.entries()) assertSameAsZod(schema, value, `${name}, value ${i}`)
    }
    assertSameAsZod(schemas[8]![1], JSON.parse('{"__proto__":"p","b":"y"}'), 'own __proto__')
  })

  it('takes the values zod takes for an enum: not the reverse names of a numeric TypeScript enum', () => {
    enum Level {
      Low = 1,
      High = 2,
    }
    const schema = z.object({ level: z.enum(Level), word: z.enum(['a', 'b']) })
    for (const value of [
      { level: 1, word: 'a' },
      { level: Level.High, word: 'b' },
      { level: 'Low', word: 'a' },
      { level: 3, word: 'a' },
      { level: 1, word: 'c' },
    ]) {
      assertSameAsZod(schema, value, JSON.stringify(value))
    }
  })

  it('writes a schema that contains itself', () => {
    const node = z.object({
      name: z.string(),
      get children() {
        return z.array(node)
      },
    })
    const tree = {
      name: 'a',
      children: [
        { name: 'b', children: [] },
        { name: 'c', children: [{ name: 'd', children: [] }] },
      ],
    }
    assert.equal(writeChecked(node, tree), JSON.stringify(tree))
    assertSameAsZod(node, tree, 'tree')
    assertSameAsZod(node, { name: 'a', children: [{ name: 'b' }] }, 'missing children')
  })

  it('throws ResponseNotSerializable, naming the route and where the value went wrong', () => {
    const serialize = responseSerializerCompiler({
      schema: z.object({ items: z.array(z.object({ id: z.string() })) }),
      method: 'GET',
      url: '/v1/things',
      httpStatus: '200',
    })
    assert.equal(serialize({ items: [{ id: 'a' }] }), '{"items":[{"id":"a"}]}')
    assert.throws(
      () => serialize({ items: [{ id: 'a' }, { id: 7 }] }),
      (err: unknown) =>
        err instanceof ResponseNotSerializable &&
        err.message === 'the response of GET /v1/things does not fit its schema' &&
        (err.cause as Error).message === 'response /items/1/id: expected a string',
    )
    const causeOf = (value: unknown) => {
      try {
        serialize(value)
      } catch (err) {
        return ((err as Error).cause as Error).message
      }
      return 'no error'
    }
    assert.equal(causeOf({ items: [{}] }), 'response /items/0/id: expected a value')
    assert.equal(causeOf({ items: {} }), 'response /items: expected an array')
    assert.equal(causeOf(null), 'response (root): expected an object')
    const strict = writeChecked.bind(null, z.strictObject({ a: z.object({ b: z.strictObject({}) }) }))
    assert.throws(() => strict({ a: { b: { c: 1 } } }), { message: 'response /a/b/c: expected no such key' })
  })

  it("serves the app's answers as zod would have written them", async (t) => {
    const app = await buildTestApp(t)
    const writer = await app.key('orchestrator', ['orch-a', 'orch-b'])
    const outcome = await createOutcome(app, writer, { expected_orchestrators: ['orch-a', 'orch-b'] })
    const posted = await app.request(writer, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/interpretations`,
      payload: {
        orchestrator_id: 'orch-a',
        success_criterion: { require: ['exit_code == 0'] },
        outcome_interpretation: 'success',
        intended_action: { kind: 'proceed', resources: ['refund:1'] },
      },
    })
    assert.equal(posted.statusCode, 201, posted.body)
    assert.equal(posted.body, JSON.stringify(interpretationCreatedSchema.encode(posted.json())))
    await interpret(app, writer, outcome.outcome_id, {
      orchestrator_id: 'orch-b',
      outcome_interpretation: 'failure',
    })
    const read = await app.request(writer, { method: 'GET', url: `/v1/outcomes/${outcome.outcome_id}` })
    assert.equal(read.statusCode, 200)
    assert.equal(read.body, JSON.stringify(outcomeSchema.encode(read.json())))
    assert.equal(read.json().interpretations.length, 2)
  })
})
