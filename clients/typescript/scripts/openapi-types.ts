import { readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript'
import ts from 'typescript'

const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The service's committed OpenAPI document: the single source of the client's request and response types. */
export const OPENAPI_DOCUMENT = join(PACKAGE_ROOT, '..', '..', 'openapi', 'openapi.json')

/** The generated, committed types. */
export const GENERATED_TYPES = join(PACKAGE_ROOT, 'src', 'generated', 'openapi.ts')

type JsonObject = { [key: string]: unknown }

/**
 * True for the schema of "any JSON value" (string, number, boolean, null, or an array or object of itself), the
 * one recursive schema the service uses (the components `JsonValue` and `JsonValueInput`). TypeScript refuses such
 * a union as an interface member that refers to itself, so it is generated as a reference to a `JsonValue` type
 * alias instead.
 */
export function isJsonValueSchema(schema: unknown, name: string): boolean {
  const self = `#/components/schemas/${name}`
  const anyOf = (schema as { anyOf?: unknown[] } | undefined)?.anyOf
  if (!Array.isArray(anyOf) || anyOf.length !== 6) return false
  const shapes = new Set(
    anyOf.map((member) => {
      const m = member as {
        type?: string
        items?: { $ref?: string }
        additionalProperties?: { $ref?: string }
      }
      if (m.type === 'array') return m.items?.$ref === self ? 'array' : 'other'
      if (m.type === 'object') return m.additionalProperties?.$ref === self ? 'object' : 'other'
      return m.type ?? 'other'
    }),
  )
  return ['string', 'number', 'boolean', 'null', 'array', 'object'].every((shape) => shapes.has(shape))
}

const JSON_VALUE_ALIAS =
  'export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };'

/** The TypeScript text of `src/generated/openapi.ts` for an OpenAPI document. Deterministic: same document, same text. */
export async function generateTypes(documentText: string): Promise<string> {
  const document = JSON.parse(documentText) as JsonObject
  const schemas = (document.components as { schemas: JsonObject }).schemas
  const jsonValues = new Set(
    Object.keys(schemas)
      .filter((name) => isJsonValueSchema(schemas[name], name))
      .map((name) => `#/components/schemas/${name}`),
  )
  const jsonValueType = ts.factory.createTypeReferenceNode('JsonValue')
  const ast = await openapiTS(document as unknown as OpenAPI3, {
    silent: true,
    inject: jsonValues.size > 0 ? JSON_VALUE_ALIAS : undefined,
    transform: (_schema, options) =>
      options.path && jsonValues.has(options.path) ? jsonValueType : undefined,
  })
  return `${COMMENT_HEADER}${astToString(ast)}`
}

/** `npm run generate -w @arbiter/client`: regenerates the committed types from openapi/openapi.json. */
async function main(): Promise<void> {
  const text = await generateTypes(await readFile(OPENAPI_DOCUMENT, 'utf8'))
  await writeFile(GENERATED_TYPES, text)
  process.stdout.write(`wrote ${GENERATED_TYPES}\n`)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`generate: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
}
