import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, it } from 'node:test'
import {
  GENERATED_TYPES,
  generateTypes,
  hoistSharedDefinitions,
  isJsonValueSchema,
  OPENAPI_DOCUMENT,
} from '../scripts/openapi-types.ts'

describe('generated types', () => {
  it('keep src/generated/openapi.ts identical to what openapi/openapi.json generates (run `npm run generate -w @arbiter/client`)', async () => {
    const committed = await readFile(GENERATED_TYPES, 'utf8')
    const regenerated = await generateTypes(await readFile(OPENAPI_DOCUMENT, 'utf8'))
    assert.equal(committed, regenerated, 'src/generated/openapi.ts drifted from openapi/openapi.json')
  })

  it('generate the same text twice from one document', async () => {
    const document = await readFile(OPENAPI_DOCUMENT, 'utf8')
    assert.equal(await generateTypes(document), await generateTypes(document))
  })

  it('type free JSON members as JsonValue rather than unknown', async () => {
    const text = await readFile(GENERATED_TYPES, 'utf8')
    assert.match(text, /export type JsonValue = string \| number \| boolean \| null \| JsonValue\[\]/)
    assert.match(text, /success_criterion\?: components\["schemas"\]\["schema\d+"\]/)
  })
})

describe('hoistSharedDefinitions', () => {
  const jsonValue = (name: string) => ({
    anyOf: [
      { type: 'string' },
      { type: 'number' },
      { type: 'boolean' },
      { type: 'null' },
      { type: 'array', items: { $ref: `#/components/schemas/__shared#/$defs/${name}` } },
      { type: 'object', additionalProperties: { $ref: `#/components/schemas/__shared#/$defs/${name}` } },
    ],
  })

  it('makes both reference forms of a shared definition point at one component', () => {
    const document = {
      components: {
        schemas: { __shared: { $defs: { schema0: jsonValue('schema0') } }, Other: { type: 'string' } },
      },
      paths: {
        '/a': { post: { a: { $ref: '#/components/schemas/schema0' } } },
        '/b': { post: { b: { $ref: '#/components/schemas/__shared#/$defs/schema0' } } },
      },
    }
    const { document: hoisted, hoisted: names } = hoistSharedDefinitions(document)
    assert.deepEqual(names, ['schema0'])
    const schemas = (hoisted.components as { schemas: Record<string, unknown> }).schemas
    assert.deepEqual(Object.keys(schemas).sort(), ['Other', 'schema0'])
    assert.deepEqual(hoisted.paths, {
      '/a': { post: { a: { $ref: '#/components/schemas/schema0' } } },
      '/b': { post: { b: { $ref: '#/components/schemas/schema0' } } },
    })
    assert.equal(isJsonValueSchema(schemas.schema0, 'schema0'), true)
    assert.ok('__shared' in document.components.schemas, 'the input document is left as it was')
  })

  it('leaves a document without shared definitions unchanged', () => {
    const document = { components: { schemas: { A: { type: 'string' } } }, paths: {} }
    assert.deepEqual(hoistSharedDefinitions(document), { document, hoisted: [] })
  })

  it('refuses to overwrite a component of the same name', () => {
    const document = { components: { schemas: { __shared: { $defs: { A: {} } }, A: { type: 'string' } } } }
    assert.throws(() => hoistSharedDefinitions(document), /a component of that name exists/)
  })

  it('recognises only the any-JSON-value schema as JsonValue', () => {
    assert.equal(isJsonValueSchema({ anyOf: [{ type: 'string' }] }, 'x'), false)
    const other = jsonValue('schema0')
    const { document } = hoistSharedDefinitions({
      components: { schemas: { __shared: { $defs: { schema0: other } } } },
    })
    const hoisted = (document.components as { schemas: Record<string, unknown> }).schemas.schema0
    assert.equal(isJsonValueSchema(hoisted, 'schema1'), false, 'it must refer to itself')
  })
})
