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

const SHARED = '__shared'
const SHARED_REF = /^#\/components\/schemas\/__shared#\/\$defs\/(.+)$/

/**
 * The service's document writes recursive schemas (free JSON such as evidence `content`) as definitions under a
 * `__shared` component and refers to them in two ways no OpenAPI tool resolves: `#/components/schemas/__shared#/$defs/X`
 * (two fragments) and `#/components/schemas/X` (a component that is never declared). Hoisting each definition to a
 * component of its own makes both forms valid references to the same schema; nothing else in the document changes.
 */
export function hoistSharedDefinitions(document: JsonObject): { document: JsonObject; hoisted: string[] } {
  const copy = structuredClone(document)
  const schemas = ((copy.components as JsonObject | undefined)?.schemas ?? {}) as JsonObject
  const shared = schemas[SHARED] as { $defs?: JsonObject } | undefined
  if (shared === undefined) return { document: copy, hoisted: [] }
  const hoisted: string[] = []
  for (const [name, definition] of Object.entries(shared.$defs ?? {})) {
    if (name in schemas)
      throw new Error(`cannot hoist ${SHARED}.$defs.${name}: a component of that name exists`)
    schemas[name] = definition
    hoisted.push(name)
  }
  delete schemas[SHARED]
  return { document: rewriteRefs(copy) as JsonObject, hoisted }
}

/**
 * True for the schema of "any JSON value" (string, number, boolean, null, or an array or object of itself), the
 * one recursive schema the service uses. TypeScript refuses such a union as an interface member that refers to
 * itself, so it is generated as a reference to a `JsonValue` type alias instead.
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

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs)
  if (typeof value !== 'object' || value === null) return value
  const out: JsonObject = {}
  for (const [key, member] of Object.entries(value)) {
    const match = key === '$ref' && typeof member === 'string' ? SHARED_REF.exec(member) : null
    out[key] = match ? `#/components/schemas/${match[1]}` : rewriteRefs(member)
  }
  return out
}

/** The TypeScript text of `src/generated/openapi.ts` for an OpenAPI document. Deterministic: same document, same text. */
export async function generateTypes(documentText: string): Promise<string> {
  const { document, hoisted } = hoistSharedDefinitions(JSON.parse(documentText) as JsonObject)
  const schemas = (document.components as { schemas: JsonObject }).schemas
  const jsonValues = new Set(
    hoisted
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
