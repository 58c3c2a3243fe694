import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, it } from 'node:test'
import {
  GENERATED_TYPES,
  generateTypes,
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
    assert.match(text, /success_criterion\?: components\["schemas"\]\["JsonValueInput"\]/)
    assert.match(text, /JsonValue: JsonValue;/)
  })
})

describe('isJsonValueSchema', () => {
  const jsonValue = (name: string) => ({
    anyOf: [
      { type: 'string' },
      { type: 'number' },
      { type: 'boolean' },
      { type: 'null' },
      { type: 'array', items: { $ref: `#/components/schemas/${name}` } },
      { type: 'object', additionalProperties: { $ref: `#/components/schemas/${name}` } },
    ],
  })

  it('recognises only the any-JSON-value schema that refers to itself', () => {
    assert.equal(isJsonValueSchema(jsonValue('JsonValue'), 'JsonValue'), true)
    assert.equal(isJsonValueSchema({ anyOf: [{ type: 'string' }] }, 'x'), false)
    assert.equal(isJsonValueSchema(jsonValue('JsonValue'), 'Other'), false, 'it must refer to itself')
  })
})
