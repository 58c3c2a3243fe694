import { FANOUT_AUDIT_KINDS, FANOUT_DIRECTIVES, FANOUT_VERDICTS } from '../domain/fanout/vocabulary.ts'
import { OUTCOME_AUDIT_KINDS, OUTCOME_DIRECTIVES, OUTCOME_VERDICTS } from '../domain/outcome/vocabulary.ts'
import { REVIEW_AUDIT_KINDS, REVIEW_DIRECTIVES, REVIEW_VERDICTS } from '../domain/review/vocabulary.ts'
import { type CaseKindModule, sharedCaseSchemas } from '../http/case-kinds.ts'
import { fanoutCase } from './fanout/kind.ts'
import { fanoutDocs } from './fanout/openapi.ts'
import { fanoutRoutes } from './fanout/routes.ts'
import { reconciliationManifestSchema } from './fanout/schemas.ts'
import { auditRecordExample, escalationExample, haltEnvelopeExample } from './outcome/examples.ts'
import { outcomeCase } from './outcome/kind.ts'
import { outcomeDocs } from './outcome/openapi.ts'
import { outcomeRoutes } from './outcome/routes.ts'
import { divergenceReceiptSchema, outcomeManifestSchema } from './outcome/schemas.ts'
import { reviewCase } from './review/kind.ts'
import { reviewDocs } from './review/openapi.ts'
import { reviewRoutes } from './review/routes.ts'
import { reviewManifestSchema } from './review/schemas.ts'

/**
 * The case kinds this service settles: one entry each. A kind's folder holds everything else (its decision in
 * src/domain/<kind>/, its CaseKind, service, repository, schemas and routes in src/cases/<kind>/); the entry says
 * what the shared resources (audit records, escalations, the manifest feed) take from it. See
 * docs/architecture.md, "Adding a case kind".
 */
export const CASE_KIND_MODULES: readonly CaseKindModule[] = [
  {
    kind: outcomeCase,
    idField: 'outcome_id',
    inputTables: ['interpretations', 'evidence_items', 'evidence_versions'],
    vocabulary: {
      auditKinds: OUTCOME_AUDIT_KINDS,
      verdicts: OUTCOME_VERDICTS,
      directives: OUTCOME_DIRECTIVES,
    },
    manifestSchema: outcomeManifestSchema,
    routes: outcomeRoutes,
    docs: outcomeDocs,
    escalationFields: { interpretation_divergence_receipt: divergenceReceiptSchema },
    examples: {
      auditRecord: auditRecordExample,
      escalation: escalationExample,
      envelope: haltEnvelopeExample,
    },
  },
  {
    kind: reviewCase,
    idField: 'review_id',
    inputTables: ['review_verdicts'],
    vocabulary: { auditKinds: REVIEW_AUDIT_KINDS, verdicts: REVIEW_VERDICTS, directives: REVIEW_DIRECTIVES },
    manifestSchema: reviewManifestSchema,
    routes: reviewRoutes,
    docs: reviewDocs,
  },
  {
    kind: fanoutCase,
    idField: 'fanout_id',
    inputTables: ['fanout_results'],
    vocabulary: { auditKinds: FANOUT_AUDIT_KINDS, verdicts: FANOUT_VERDICTS, directives: FANOUT_DIRECTIVES },
    manifestSchema: reconciliationManifestSchema,
    routes: fanoutRoutes,
    docs: fanoutDocs,
  },
]

/** The shared words (verdicts, audit kinds, …) and schemas (an audit record, any manifest) of the kinds above. */
export function registeredCaseSchemas() {
  return sharedCaseSchemas(CASE_KIND_MODULES)
}
