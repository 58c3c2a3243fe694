import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { fanoutRoutes } from './fanout/routes.ts'
import { reconciliationManifestSchema } from './fanout/schemas.ts'
import { outcomeRoutes } from './outcome/routes.ts'
import { outcomeManifestSchema } from './outcome/schemas.ts'
import { reviewRoutes } from './review/routes.ts'
import { reviewManifestSchema } from './review/schemas.ts'

/**
 * The case kinds this service settles: one line each. A kind's folder holds everything else (its decision in
 * src/domain/<kind>/, its CaseKind, service, repository, schemas and routes in src/cases/<kind>/); see
 * docs/architecture.md, "Adding a case kind".
 */
export const CASE_KIND_MODULES: readonly CaseKindModule[] = [
  { name: 'outcome', routes: outcomeRoutes, manifestSchema: outcomeManifestSchema },
  { name: 'review', routes: reviewRoutes, manifestSchema: reviewManifestSchema },
  { name: 'fanout', routes: fanoutRoutes, manifestSchema: reconciliationManifestSchema },
]

export interface CaseKindModule {
  name: string
  /** The kind's HTTP routes (create, inputs, decide, resolve, its audit story). */
  routes: FastifyPluginAsyncZod
  /** Its signed manifest, for the documentation of the one feed every kind's manifests share. */
  manifestSchema: z.ZodType
}

/** The manifest schema of the shared feed: any kind's manifest. */
export function manifestSchemaOfEveryKind(): z.ZodType {
  const [first, ...rest] = CASE_KIND_MODULES.map((kind) => kind.manifestSchema)
  if (!first) throw new Error('no case kind is registered')
  return rest.length === 0 ? first : z.union([first, ...rest])
}
