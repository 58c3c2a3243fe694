import type { CaseKindModule } from '../../../src/http/case-kinds.ts'
import { TALLY_AUDIT_KINDS, TALLY_DIRECTIVES, TALLY_VERDICTS, tallyCase } from './kind.ts'
import { tallyRoutes } from './routes.ts'
import { tallyManifestSchema } from './schemas.ts'

/** What the tally's registry line would say: `buildApp({ extraCaseKinds: [tallyModule] })` serves it. */
export const tallyModule: CaseKindModule = {
  kind: tallyCase,
  idField: 'tally_id',
  inputTables: ['tally_votes'],
  vocabulary: { auditKinds: TALLY_AUDIT_KINDS, verdicts: TALLY_VERDICTS, directives: TALLY_DIRECTIVES },
  manifestSchema: tallyManifestSchema,
  routes: tallyRoutes,
  docs: {
    operationIds: {
      'POST /v1/tallies': 'createTally',
      'POST /v1/tallies/{id}/votes': 'castTallyVote',
      'POST /v1/tallies/{id}/evaluate': 'evaluateTally',
      'POST /v1/tallies/{id}/resolution': 'resolveTally',
      'GET /v1/audit/tallies/{id}': 'getTallyStory',
    },
    tags: { tallies: 'Votes counted to a majority (a test-only kind)' },
  },
}
