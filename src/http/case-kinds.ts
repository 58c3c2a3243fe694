import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { ADMIN_AUDIT_KINDS, ENGINE_AUDIT_KINDS } from '../domain/vocabulary.ts'
import { WEBHOOK_AUDIT_KINDS } from '../domain/webhooks/vocabulary.ts'
import type { CaseKind, ManifestContent } from '../engine/case-kind.ts'
import { auditRecordSchemaOf } from './schemas/audit.ts'

// biome-ignore lint/suspicious/noExplicitAny: a list of kinds holds kinds of every case, input and content type
export type AnyCaseKind = CaseKind<any, any, ManifestContent, any, any, any>

/**
 * What a case kind brings to the HTTP app, beside its engine `CaseKind`: the words it adds to the shared lists,
 * the name of its id in the shared filters and views, its manifest's schema and its routes. Shared code (the
 * audit, escalation and manifest routes) is built from a list of these and names no kind itself;
 * src/cases/registry.ts lists the kinds the service settles.
 */
export interface CaseKindModule {
  kind: AnyCaseKind
  /** How the shared filters and views name a case of this kind: `outcome_id` (`?outcome_id=`, an escalation's). */
  idField: string
  /**
   * The tables whose rows its decision reads as inputs: every write of one must give the case row a new version
   * (src/engine/case-inputs.ts), which test/architecture/input-writes.test.ts holds each statement of src/ to.
   */
  inputTables: readonly string[]
  /** The words it adds to the shared lists (list filters accept each, audit records carry each). */
  vocabulary: CaseVocabulary
  /** Its signed manifest, for the documentation of the one feed every kind's manifests share. */
  manifestSchema: z.ZodType
  /** The kind's HTTP routes (create, inputs, decide, resolve, its audit story). */
  routes: FastifyPluginAsyncZod<CaseRouteOptions>
  /** What the API document says of those routes' operations: their operationIds, their groups. */
  docs: CaseKindDocs
  /** Fields an escalation of this kind copies from its HALT manifest (null for other kinds' escalations). */
  escalationFields?: Record<string, z.ZodType>
  /** Examples the shared resources show in the OpenAPI document. */
  examples?: { auditRecord?: unknown; escalation?: unknown; envelope?: unknown }
}

export interface CaseVocabulary {
  auditKinds: readonly string[]
  verdicts: readonly string[]
  directives: readonly string[]
}

/** What the OpenAPI document says of a kind's operations beyond their zod schemas. */
export interface CaseKindDocs {
  /** The `operationId` of each of its operations, by `METHOD /openapi/path`: stable names, never rename one. */
  operationIds: Readonly<Record<string, string>>
  /** The groups (tags) its routes put their operations in, each with what it is, in the document's order. */
  tags: Readonly<Record<string, string>>
  /** Where its groups come among the kinds' in the document, lowest first; kinds without one follow. */
  tagOrder?: number
}

/** What every kind's routes are given: the shared schemas built for the kinds the app serves. */
export interface CaseRouteOptions {
  /** An audit record of any kind (a case's story lists them). */
  auditRecordSchema: z.ZodType
}

/** The shared lists, each word once, in the order of the kinds (kinds share some: `HUMAN_RESOLVED`, `PROCEED`). */
export function caseWords(modules: readonly CaseKindModule[]) {
  const all = (words: (module: CaseKindModule) => readonly string[]) => unique(modules.flatMap(words))
  return {
    caseKinds: all((m) => [m.kind.name]),
    manifestKinds: all((m) => [m.kind.manifestKind]),
    verdicts: all((m) => m.vocabulary.verdicts),
    directives: all((m) => m.vocabulary.directives),
    auditKinds: unique([
      ...modules.flatMap((m) => m.vocabulary.auditKinds),
      ...ENGINE_AUDIT_KINDS,
      ...ADMIN_AUDIT_KINDS,
      ...WEBHOOK_AUDIT_KINDS,
    ]),
    /** Kinds whose HALT opens an escalation for a human: those with a resolution (reviews hand back instead). */
    escalationCases: all((m) => (m.kind.resolution === undefined ? [] : [m.kind.name])),
  }
}

export type CaseWords = ReturnType<typeof caseWords>

/** A list for `z.enum` (a kind adds at least its name, verdicts and directives to each). */
function unique(words: readonly string[]): [string, ...string[]] {
  return [...new Set(words)] as [string, ...string[]]
}

/**
 * The shared schemas for a list of kinds, built once per list of kind names: their OpenAPI components (`AuditRecord`,
 * `Escalation`) are registered by id, so an app of the same kinds must reuse them.
 */
export function sharedCaseSchemas(modules: readonly CaseKindModule[]): SharedCaseSchemas {
  const key = modules.map((m) => m.kind.name).join(',')
  let schemas = builtSchemas.get(key)
  if (schemas === undefined) {
    schemas = buildSchemas(modules)
    builtSchemas.set(key, schemas)
  }
  return schemas
}

export interface SharedCaseSchemas {
  words: CaseWords
  auditRecord: ReturnType<typeof auditRecordSchemaOf>
  /** Every kind's manifest. */
  manifest: z.ZodType
}

const builtSchemas = new Map<string, SharedCaseSchemas>()

function buildSchemas(modules: readonly CaseKindModule[]): SharedCaseSchemas {
  const words = caseWords(modules)
  const [first, ...rest] = modules.map((m) => m.manifestSchema)
  if (!first) throw new Error('no case kind is registered')
  return {
    words,
    auditRecord: auditRecordSchemaOf(
      words.auditKinds,
      sharedExamples(modules, (e) => e.auditRecord),
    ),
    manifest: rest.length === 0 ? first : z.union([first, ...rest]),
  }
}

/** The examples of the shared resources the kinds give (`auditRecord`, `escalation`, `envelope`), in their order. */
export function sharedExamples(
  modules: readonly CaseKindModule[],
  pick: (examples: NonNullable<CaseKindModule['examples']>) => unknown,
): unknown[] {
  return modules.flatMap((m) => {
    const example = m.examples ? pick(m.examples) : undefined
    return example === undefined ? [] : [example]
  })
}

/** The cases a query's `<id field>: id` filters name, as the engine's `CaseRef`s, in the order of the kinds. */
export function casesNamed(
  modules: readonly CaseKindModule[],
  query: Readonly<Record<string, unknown>>,
): { kind: string; id: string }[] {
  return modules.flatMap((m) => {
    const id = query[m.idField]
    return typeof id === 'string' ? [{ kind: m.kind.name, id }] : []
  })
}
